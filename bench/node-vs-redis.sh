#!/usr/bin/env bash
# Compare a shardgate node with redis-server using redis-benchmark.
#
# Builds shardgate, starts one node and one redis-server on free ports,
# then runs redis-benchmark (SET, GET, INCR, MSET; 50 clients; -P 1 and
# -P 16) against each target in turn, interleaved (redis, node, redis,
# node, ...) for ROUNDS rounds, and prints a Markdown table of median
# requests per second with the node/redis ratio and the per-round ratios.
#
# The redis-server runs in plain (non-cluster) mode: for these commands
# on one node cluster mode changes nothing that redis-benchmark measures.
# SET, GET and INCR use random keys (-r KEYSPACE); MSET uses redis-benchmark's
# fixed key, because its 10 random keys would span slots, which a cluster
# node (ours) must refuse with CROSSSLOT.
#
# The machine's cores are shared by the benchmark client and the server
# under test; differences under ~15% are noise. Next to throughput the
# script reports the server's own CPU time per request (user plus system,
# from /proc/PID/stat around each run): on a 2-core machine a server that
# keeps up with redis-benchmark is held to the load generator's pace, so
# requests per second stop telling the two servers apart while the CPU
# each spends per request still does.
#
# The counting commands of issue 3 run as custom redis-benchmark commands:
# BITFIELD INCRBY on one counter (the seed use case), PFADD of random
# elements and PFCOUNT of the same HyperLogLog (cached and recomputed
# counts alternate as PFADD changes it). SETBIT/GETBIT/BITCOUNT need random
# bit offsets, which redis-benchmark cannot produce: bench/bits.sh has them.
#
# Environment:
#   NODE_PROCS --procs for the node (default 0: Go's default, one thread
#              per core; 1 matches Redis's single command thread and leaves
#              the other core to redis-benchmark on a 2-core machine)
#   COUNTING   set to 0 to skip the BITFIELD/PFADD/PFCOUNT runs
#   ROUNDS     rounds of the interleaved runs (default 3)
#   REQUESTS   requests per redis-benchmark run at -P 1 (default 200000)
#   REQUESTS_PIPELINED  requests per run at deeper pipelines (default
#              2000000: a few seconds each, so that connecting 50 clients
#              and the first milliseconds do not weigh on the result)
#   CLIENTS    parallel connections (default 50)
#   SCHED      other (default) or batch (see bench_init in lib.sh)
#   PIPELINES  pipeline depths to test (default "1 16")
#   KEYSPACE   random key range for SET/GET/INCR (default 100000)
#   NODE_PORT, REDIS_PORT  fixed ports instead of free ones
set -euo pipefail

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
REQUESTS_PIPELINED=${REQUESTS_PIPELINED:-2000000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
KEYSPACE=${KEYSPACE:-100000}
COUNTING=${COUNTING:-1}
NODE_PROCS=${NODE_PROCS:-0}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_init bench
require go redis-server redis-cli redis-benchmark



NODE_PORT=${NODE_PORT:-$(free_port)}
REDIS_PORT=${REDIS_PORT:-$(free_port)}
[[ $NODE_PORT != "$REDIS_PORT" ]] || REDIS_PORT=$(free_port)

echo "building shardgate..." >&2
(cd "$root" && go build -o "$work/shardgate" ./cmd/shardgate)

"$work/shardgate" node --addr "127.0.0.1:$NODE_PORT" --procs "$NODE_PROCS" --log-level warn 2>"$work/node.log" &
pids+=($!)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--daemonize no --dir "$work" --logfile "$work/redis.log" &
pids+=($!)
wait_ping "$NODE_PORT"
wait_ping "$REDIS_PORT"

# A benchmark full of error replies would measure nothing: check that
# both targets accept what redis-benchmark sends.
for port in "$REDIS_PORT" "$NODE_PORT"; do
	if [[ $(redis-cli -p "$port" mset key:__rand_int__ v key:__rand_int__ v) != OK ]]; then
		echo "MSET fails on port $port" >&2
		exit 1
	fi
done

results=$work/results.csv # round,pipeline,target,test,rps,cpu_us_per_request
: >"$results"
declare -A server_pid=([redis]="${pids[1]}" [node]="${pids[0]}")
tick_us=$((1000000 / $(getconf CLK_TCK)))

# cpu_ticks prints a process's user plus system time in clock ticks.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# run_one runs one redis-benchmark test against a target and records its
# requests per second and the server's CPU time per request.
run_one() {
	local target=$1 port=$2 p=$3 round=$4 n=$5
	shift 5
	local before after
	before=$(cpu_ticks "${server_pid[$target]}")
	# In the background, so that a signal to this script interrupts
	# the wait and the cleanup stops the benchmark too.
	redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -n "$n" \
		-P "$p" -q --csv "$@" >"$work/out.csv" &
	bench_pid=$!
	wait "$bench_pid"
	bench_pid=
	after=$(cpu_ticks "${server_pid[$target]}")
	awk -F'","' -v r="$round" -v p="$p" -v t="$target" \
		-v cpu="$(((after - before) * tick_us))" -v n="$n" '
		NR > 1 { name = $1; sub(/^"/, "", name); sub(/ .*/, "", name)
		         printf "%s,%s,%s,%s,%s,%.2f\n", r, p, t, name, $2, cpu / n }' \
		"$work/out.csv" >>"$results"
}

bench() {
	local target=$1 port=$2 p=$3 round=$4 n=$REQUESTS test cmd
	((p == 1)) || n=$REQUESTS_PIPELINED
	for test in set get incr; do
		run_one "$target" "$port" "$p" "$round" "$n" -t "$test" -r "$KEYSPACE"
	done
	run_one "$target" "$port" "$p" "$round" "$n" -t mset
	[[ $COUNTING == 1 ]] || return 0
	for cmd in "BITFIELD streaks INCRBY u8 #40 1" "PFADD hll el:__rand_int__" "PFCOUNT hll"; do
		# shellcheck disable=SC2086 # $cmd is deliberately split into arguments
		run_one "$target" "$port" "$p" "$round" "$n" -r "$KEYSPACE" $cmd
	done
}

for round in $(seq "$ROUNDS"); do
	for p in $PIPELINES; do
		echo "round $round/$ROUNDS, -P $p..." >&2
		bench redis "$REDIS_PORT" "$p" "$round"
		bench node "$NODE_PORT" "$p" "$round"
	done
done

echo
echo "shardgate node vs redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')" \
	"(plain mode), node --procs $NODE_PROCS, $CLIENTS clients, $REQUESTS requests per run, $ROUNDS rounds, $(nproc) cores, scheduling $sched_policy"
echo
echo "| test | -P | redis rps (median) | node rps (median) | node/redis | per-round node/redis | redis CPU µs/req | node CPU µs/req | node/redis CPU |"
echo "|------|---:|-------------------:|------------------:|-----------:|----------------------|-----------------:|----------------:|---------------:|"
awk -F, -v rounds="$ROUNDS" "$awk_median"'
	{
		key = $4 SUBSEP $2
		if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
		vals[key, $3] = vals[key, $3] " " $5
		cpu[key, $3] = cpu[key, $3] " " $6
		rps[key, $3, $1] = $5
	}
	END {
		for (k = 1; k <= nkeys; k++) {
			key = order[k]; split(key, parts, SUBSEP)
			r = median(vals[key, "redis"]); nd = median(vals[key, "node"])
			per = ""
			for (i = 1; i <= rounds; i++)
				per = per sprintf("%s%.2f", i > 1 ? " " : "", rps[key, "node", i] / rps[key, "redis", i])
			rc = median(cpu[key, "redis"]); nc = median(cpu[key, "node"])
			printf "| %s | %s | %.0f | %.0f | %.2f | %s | %.2f | %.2f | %.2f |\n", parts[1], parts[2], r, nd, nd / r, per, rc, nc, (rc > 0 ? nc / rc : 0)
		}
	}' "$results"
