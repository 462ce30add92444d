#!/usr/bin/env bash
# Streams side by side (issue 6): a plain redis-server, one shardgate node,
# and the shardgate proxy over 3 nodes, in interleaved rounds (for each
# round, pipeline depth and test: redis node proxy), measured with
# bench/streamq (redis-benchmark cannot give XACK a different pending
# entry per call, nor set up a consumer group):
#   XADD                 on an empty stream;
#   XREADGROUP COUNT 10  '>' on a stream of 10·N entries: each call
#                        delivers 10 new entries to its client's consumer;
#   XACK                 each call acknowledges a different pending entry;
#   XPENDING - + 10      the extended form, 10,000 entries pending over 10
#                        consumers; XPENDING (summary) on the same;
#   XAUTOCLAIM COUNT 10  minimum idle time 0: each call claims the 10
#                        oldest pending entries (of 10,000) and returns
#                        them with their fields.
# The stream is {bench}s: through the proxy every test runs on one node.
# Setup (filling the stream, reading entries into pending lists) is not
# timed; every reply is checked. Prints a Markdown table: medians,
# node/redis and proxy/redis ratios of the medians, and the per-round
# ratios (each target against redis-server in the same round).
#
# Environment: ROUNDS (3), REQUESTS (100000 per run at -P 1; XREADGROUP
# uses a quarter, on a stream of 10x that), REQUESTS_PIPELINED (1000000
# per run at deeper pipelines: 100000 pipelined XACKs last a tenth of a
# second, too short to tell 5% apart), CLIENTS (50), PIPELINES ("1 16"), TESTS (all six:
# xadd xreadgroup xack xpending xpending_summary xautoclaim), NODE_PROCS
# (0), PROXY_FLAGS (extra proxy flags), SCHED (other or batch: see
# bench_init in lib.sh).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-100000}
REQUESTS_PIPELINED=${REQUESTS_PIPELINED:-1000000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-1 16}
TESTS=${TESTS:-xadd xreadgroup xack xpending xpending_summary xautoclaim}
NODE_PROCS=${NODE_PROCS:-0}
PROXY_FLAGS=${PROXY_FLAGS:-}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_init streams
require go redis-server redis-cli

echo "building shardgate and bench/streamq..." >&2
(cd "$root" && go build -o "$work/shardgate" ./cmd/shardgate && go build -o "$work/streamq" ./bench/streamq)

start_three_targets
results=$work/results.csv # round,pipeline,target,test,rps
: >"$results"
for round in $(seq "$ROUNDS"); do
	for p in $PIPELINES; do
		echo "round $round/$ROUNDS, -P $p..." >&2
		for test in $TESTS; do
			n=$REQUESTS
			((p > 1)) && n=$REQUESTS_PIPELINED
			[[ $test == xreadgroup ]] && n=$((n / 4))
			for t in redis node proxy; do
				out=$("$work/streamq" -addr "127.0.0.1:${port[$t]}" -test "$test" -n "$n" -c "$CLIENTS" -P "$p") || {
					echo "streamq $test on $t failed" >&2
					exit 1
				}
				echo "$round,$p,$t,${out%%,*},${out#*,}" >>"$results"
			done
		done
	done
done

echo
echo "Streams: redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), one shardgate node, the proxy over 3 nodes;" \
	"bench/streamq, $CLIENTS clients, $REQUESTS requests per run at -P 1 and $REQUESTS_PIPELINED deeper (XREADGROUP a quarter), $ROUNDS rounds, $(nproc) cores, scheduling $sched_policy," \
	"node --procs $NODE_PROCS${PROXY_FLAGS:+, proxy $PROXY_FLAGS}"
echo
awk -F, "$awk_median"'
	BEGIN {
		name["xadd"] = "XADD"; name["xreadgroup"] = "XREADGROUP COUNT 10"; name["xack"] = "XACK"
		name["xpending"] = "XPENDING - + 10"; name["xpending_summary"] = "XPENDING (summary)"
		name["xautoclaim"] = "XAUTOCLAIM COUNT 10"
	}
	{
		key = $4 SUBSEP $2
		if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
		vals[key, $3] = vals[key, $3] " " $5
		rps[key, $3, $1] = $5
		if ($1 > rounds) rounds = $1
	}
	END {
		print "| test | -P | redis rps | node rps | proxy rps | node/redis | proxy/redis | node/redis per round | proxy/redis per round |"
		print "|------|---:|----------:|---------:|----------:|-----------:|------------:|------|------|"
		for (k = 1; k <= nk; k++) {
			key = order[k]; split(key, parts, SUBSEP)
			r = median(vals[key, "redis"]); n = median(vals[key, "node"]); x = median(vals[key, "proxy"])
			nr = ""; xr = ""
			for (i = 1; i <= rounds; i++) {
				nr = nr sprintf("%s%.2f", i > 1 ? " " : "", rps[key, "node", i] / rps[key, "redis", i])
				xr = xr sprintf("%s%.2f", i > 1 ? " " : "", rps[key, "proxy", i] / rps[key, "redis", i])
			}
			printf "| %s | %s | %.0f | %.0f | %.0f | %.2f | %.2f | %s | %s |\n", name[parts[1]], parts[2], r, n, x, n / r, x / r, nr, xr
		}
	}' "$results"
