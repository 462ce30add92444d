#!/usr/bin/env bash
# Lists side by side (issue 5): a plain redis-server, one shardgate node,
# and the shardgate proxy over 3 nodes, in interleaved rounds.
#   - redis-benchmark LPUSH, RPOP and LRANGE_100 at -P 1 and -P 16
#     (50 clients; redis-benchmark's list tests use one key, so through
#     the proxy they all go to one node);
#   - bench/queue: the reliable-queue pattern (producers LPUSH, workers
#     BLMOVE into a processing list and LREM on success), completed jobs
#     per second, and the wake-up latency of a client blocked in BRPOP.
# Prints Markdown tables: medians and ratios to redis-server.
#
# Environment: ROUNDS (3), REQUESTS (200000), CLIENTS (50), PIPELINES
# ("1 16"), NODE_PROCS (0), PROXY_FLAGS (extra proxy flags), JOBS (100000),
# SCHED (other or batch: see bench_init in lib.sh).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-1 16}
NODE_PROCS=${NODE_PROCS:-0}
PROXY_FLAGS=${PROXY_FLAGS:-}
JOBS=${JOBS:-100000}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_init lists
require go redis-server redis-cli redis-benchmark

echo "building shardgate and bench/queue..." >&2
(cd "$root" && go build -o "$work/shardgate" ./cmd/shardgate && go build -o "$work/queue" ./bench/queue)

start_three_targets
results=$work/results.csv # round,pipeline,target,test,rps
: >"$results"
for round in $(seq "$ROUNDS"); do
	for p in $PIPELINES; do
		echo "round $round/$ROUNDS, -P $p..." >&2
		for t in redis node proxy; do
			redis-cli -p "${port[$t]}" del mylist >/dev/null
			redis-benchmark -h 127.0.0.1 -p "${port[$t]}" -c "$CLIENTS" -n "$REQUESTS" -P "$p" \
				-t lpush,rpop,lrange_100 -q --csv >"$work/out.csv" &
			wait $!
			awk -F'","' -v r="$round" -v p="$p" -v t="$t" '
				/^"/ && $1 != "\"test" {
					name = substr($1, 2); sub(/ .*/, "", name)
					if (name == "LPUSH" && seen++) next   # LRANGE'\''s own fill
					print r "," p "," t "," name "," $2
				}' "$work/out.csv" >>"$results"
		done
	done
done

echo
echo "Lists: redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), one shardgate node, the proxy over 3 nodes;" \
	"$CLIENTS clients, $REQUESTS requests per run, $ROUNDS rounds, $(nproc) cores, scheduling $sched_policy, node --procs $NODE_PROCS${PROXY_FLAGS:+, proxy $PROXY_FLAGS}"
echo
awk -F, -v rounds="$ROUNDS" "$awk_median"'
	{
		key = $4 SUBSEP $2
		if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
		vals[key, $3] = vals[key, $3] " " $5
	}
	END {
		print "| test | -P | redis rps | node rps | proxy rps | node/redis | proxy/redis |"
		print "|------|---:|----------:|---------:|----------:|-----------:|------------:|"
		for (k = 1; k <= nk; k++) {
			key = order[k]; split(key, parts, SUBSEP)
			r = median(vals[key, "redis"]); n = median(vals[key, "node"]); x = median(vals[key, "proxy"])
			printf "| %s | %s | %.0f | %.0f | %.0f | %.2f | %.2f |\n", parts[1], parts[2], r, n, x, n / r, x / r
		}
	}' "$results"
echo
"$work/queue" -targets "redis=127.0.0.1:$redis_port,node=127.0.0.1:$node_port,proxy=127.0.0.1:$proxy_port" \
	-rounds "$ROUNDS" -jobs "$JOBS"
