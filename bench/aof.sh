#!/usr/bin/env bash
# Issue 9's durability figures: a shardgate node and redis-server, both with
# an append-only log, side by side.
#
# 1. Write throughput for each --appendfsync policy (always, everysec, no):
#    redis-benchmark SET (random keys, -r KEYSPACE), LPUSH and XADD (a custom
#    command, 'XADD mystream * f v'), -P 16, 50 clients. Every run gets a
#    fresh server on a fresh data directory (both under one work directory,
#    so on one filesystem), which is stopped and deleted after the run; the
#    rounds interleave the two servers and alternate which goes first, and a
#    sync before each run keeps one run's writeback out of the next. After
#    each run LLEN mylist and XLEN mystream must equal the requests sent, so
#    a run answered with errors cannot pass as fast, and the log must have
#    grown. The table has the median requests per second of each server,
#    each round's shardgate/redis ratio and the median of those ratios.
#
# 2. Restart time for about 1 GB of data: RESTART_KEYS strings of VALUE_SIZE
#    random (base64) bytes, each written once with redis-cli --pipe into a
#    node and into a redis-server, both with --appendfsync everysec; SIGTERM;
#    then, interleaved for RESTART_ROUNDS rounds, each is started again and
#    timed from its launch until it answers PING and DBSIZE equals
#    RESTART_KEYS (polled every 20 ms). A third target, a copy of the
#    redis-server's directory after BGREWRITEAOF (an RDB preamble instead of
#    commands, what Redis's rewrites leave) and a copy of the node's after
#    its BGREWRITEAOF (a snapshot and an empty log) show what compaction
#    buys. The page cache holds every file (the figures are replay costs,
#    not disk reads).
#
# 3. Rewrite pauses, on the 1 GB data of part 2 (REWRITE=0 skips): for
#    REWRITE_ROUNDS interleaved rounds each server is started on its
#    rewritten copy, then redis-benchmark runs SET (-r KEYSPACE, -P 1, 50
#    clients, REWRITE_REQUESTS requests) twice: once quiet, once with a
#    BGREWRITEAOF sent a second in. The table has the clients' p99 and max
#    latency of both runs, how long the rewrite took, and the longest time
#    the server stopped serving for it: Redis's fork (latest_fork_usec), the
#    node's longest hold of one slot while it encoded the slot's keys (its
#    log's longest_slot_pause).
#
# Automatic AOF rewrites are off on both (auto-aof-rewrite-percentage 0) in
# parts 1 and 2: a rewrite would run on one of the two cores the
# benchmark shares. REDIS_AUTO_REWRITE=1 keeps both servers' defaults.
# The machine's cores are shared by redis-benchmark and the server under
# test; differences under ~15% are noise.
#
#   bash bench/aof.sh
#
# Environment:
#   ROUNDS          rounds of the throughput runs (default 3)
#   POLICIES        fsync policies (default "always everysec no")
#   REQUESTS        requests per command and run (default 1000000, 2-5 s here)
#   CLIENTS         parallel connections (default 50)
#   PIPELINE        pipeline depth (default 16)
#   KEYSPACE        random key range of SET (default 100000)
#   NODE_PROCS      --procs for the node (default 0: one thread per core)
#   RESTART         set to 0 to skip the restart figures
#   RESTART_ROUNDS  restarts of each target (default 3)
#   RESTART_KEYS    keys of the restart data (default 1000000)
#   VALUE_SIZE      bytes per value, a multiple of 4 (default 1024)
#   REDIS_AUTO_REWRITE  1: leave the automatic AOF rewrites on (both servers)
#   THROUGHPUT      set to 0 to skip the throughput figures
#   REWRITE         set to 0 to skip the rewrite pause figures
#   REWRITE_ROUNDS  rounds of the rewrite runs (default 3)
#   REWRITE_REQUESTS  SETs per rewrite-pause run (default 600000)
#   TMPDIR          where the work directory (logs, data) goes
set -euo pipefail

ROUNDS=${ROUNDS:-3}
POLICIES=${POLICIES:-"always everysec no"}
REQUESTS=${REQUESTS:-1000000}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-16}
KEYSPACE=${KEYSPACE:-100000}
NODE_PROCS=${NODE_PROCS:-0}
RESTART=${RESTART:-1}
RESTART_ROUNDS=${RESTART_ROUNDS:-3}
RESTART_KEYS=${RESTART_KEYS:-1000000}
VALUE_SIZE=${VALUE_SIZE:-1024}
REDIS_AUTO_REWRITE=${REDIS_AUTO_REWRITE:-0}
REWRITE=${REWRITE:-1}
THROUGHPUT=${THROUGHPUT:-1}
REWRITE_ROUNDS=${REWRITE_ROUNDS:-3}
REWRITE_REQUESTS=${REWRITE_REQUESTS:-600000}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/shardgate-aof.XXXXXX")
server_pid=
bench_pid=

cleanup() {
	local pid
	for pid in $bench_pid $server_pid; do
		kill "$pid" 2>/dev/null || true
	done
	[[ -z $server_pid ]] || wait "$server_pid" 2>/dev/null || true
	rm -rf "$work"
}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in go redis-server redis-cli redis-benchmark base64 awk; do
	command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
if ((VALUE_SIZE % 4 != 0)); then
	echo "VALUE_SIZE must be a multiple of 4 (base64 of VALUE_SIZE*3/4 random bytes)" >&2
	exit 1
fi

echo "building shardgate..." >&2
(cd "$root" && go build -o "$work/shardgate" ./cmd/shardgate)

rewrite_flags=(--auto-aof-rewrite-percentage 0)
[[ $REDIS_AUTO_REWRITE == 0 ]] || rewrite_flags=()

# start target port policy dir: start one server in the background; its
# pid goes to server_pid. Only one server runs at a time.
start() {
	local target=$1 port=$2 policy=$3 dir=$4
	mkdir -p "$dir"
	case $target in
	redis*)
		redis-server --port "$port" --bind 127.0.0.1 --appendonly yes --appendfsync "$policy" \
			"${rewrite_flags[@]}" --save '' --daemonize no --dir "$dir" --logfile "$work/$target.log" &
		;;
	node)
		"$work/shardgate" node --addr "127.0.0.1:$port" --procs "$NODE_PROCS" --dir "$dir" \
			--appendfsync "$policy" "${rewrite_flags[@]}" --log-level info 2>>"$work/node.log" &
		;;
	esac
	server_pid=$!
}

# stop: SIGTERM (both flush and close their logs) and wait for the exit.
stop() {
	kill -TERM "$server_pid"
	wait "$server_pid" || true
	server_pid=
}

# run_bench args...: redis-benchmark in the background, so that a signal to
# this script interrupts the wait and the cleanup stops the benchmark too.
run_bench() {
	redis-benchmark -q --csv "$@" >"$work/out.csv" &
	bench_pid=$!
	wait "$bench_pid"
	bench_pid=
}

# record round policy target: append the last run's CSV rows to results,
# named by the test's first word (SET, LPUSH, XADD).
record() {
	awk -F'","' -v r="$1" -v p="$2" -v t="$3" '
		NR > 1 { name = $1; sub(/^"/, "", name); sub(/ .*/, "", name)
		         print r "," p "," t "," name "," $2 }' "$work/out.csv" >>"$results"
}

# throughput round policy target: one fresh server, SET+LPUSH then XADD.
throughput() {
	local round=$1 policy=$2 target=$3 port dir n
	port=$(free_port)
	dir=$work/data-$target-$policy-$round
	sync
	start "$target" "$port" "$policy" "$dir"
	wait_ping "$port"
	run_bench -h 127.0.0.1 -p "$port" -c "$CLIENTS" -n "$REQUESTS" -P "$PIPELINE" \
		-t set,lpush -r "$KEYSPACE"
	record "$round" "$policy" "$target"
	run_bench -h 127.0.0.1 -p "$port" -c "$CLIENTS" -n "$REQUESTS" -P "$PIPELINE" \
		XADD mystream '*' f v
	record "$round" "$policy" "$target"
	for n in "$(redis-cli -p "$port" llen mylist)" "$(redis-cli -p "$port" xlen mystream)"; do
		if [[ $n != "$REQUESTS" ]]; then
			echo "$target ($policy): LLEN/XLEN is '$n', not $REQUESTS: the benchmark got errors" >&2
			exit 1
		fi
	done
	stop
	if (($(du -sb "$dir" | cut -f1) < REQUESTS)); then
		echo "$target ($policy): the log in $dir holds less than a byte per write" >&2
		exit 1
	fi
	rm -rf "$dir"
}

results=$work/results.csv # round,policy,target,test,rps
: >"$results"
((THROUGHPUT)) || ROUNDS=0
for round in $(seq "$ROUNDS"); do
	order="redis node"
	((round % 2)) || order="node redis"
	for policy in $POLICIES; do
		for target in $order; do
			echo "round $round/$ROUNDS, appendfsync $policy, $target..." >&2
			throughput "$round" "$policy" "$target"
		done
	done
done

# median: the median of the numbers on standard input, one a line.
median() {
	sort -g | awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

if ((ROUNDS > 0)); then
echo
echo "Write throughput: shardgate node vs redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')," \
	"append-only log on both (Redis's automatic rewrites $([[ $REDIS_AUTO_REWRITE == 0 ]] && echo off || echo on))," \
	"redis-benchmark -P $PIPELINE, $CLIENTS clients, $REQUESTS requests per command and run, SET with -r $KEYSPACE," \
	"$ROUNDS rounds, node --procs $NODE_PROCS, $(nproc) cores"
echo
echo "| appendfsync | command | redis rps (median) | shardgate rps (median) | shardgate/redis per round | shardgate/redis (median) |"
echo "|-------------|---------|-------------------:|-----------------------:|---------------------------|-------------------------:|"
awk -F, -v rounds="$ROUNDS" "$awk_median"'
	{
		key = $2 SUBSEP $4
		if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
		vals[key, $3] = vals[key, $3] " " $5
		rps[key, $3, $1] = $5
	}
	END {
		for (k = 1; k <= nkeys; k++) {
			key = order[k]; split(key, parts, SUBSEP)
			per = ""; ratios = ""
			for (i = 1; i <= rounds; i++) {
				r = rps[key, "node", i] / rps[key, "redis", i]
				per = per sprintf("%s%.2f", i > 1 ? " " : "", r)
				ratios = ratios " " r
			}
			printf "| %s | %s | %.0f | %.0f | %s | %.2f |\n", parts[1], parts[2],
				median(vals[key, "redis"]), median(vals[key, "node"]), per, median(ratios)
		}
	}' "$results"
fi

[[ $RESTART == 1 ]] || exit 0

# The restart data: RESTART_KEYS SETs of key:i to VALUE_SIZE base64
# characters of random bytes (random, so that the RDB preamble's LZF
# compression cannot shrink it), as RESP for redis-cli --pipe.
echo >&2
echo "writing $RESTART_KEYS SETs of $VALUE_SIZE bytes..." >&2
head -c $((RESTART_KEYS * VALUE_SIZE / 4 * 3)) /dev/urandom | base64 -w "$VALUE_SIZE" |
	awk '{ k = "key:" (NR - 1); printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length($0), $0 }' \
		>"$work/fill.resp"

# dbsize_is port n: the server answers PING and holds n keys.
dbsize_is() {
	[[ $(redis-cli -p "$1" ping 2>/dev/null) == PONG && $(redis-cli -p "$1" dbsize 2>/dev/null) == "$2" ]]
}

declare -A fill_s disk
for target in redis node; do
	echo "filling $target..." >&2
	port=$(free_port)
	sync
	start "$target" "$port" everysec "$work/restart-$target"
	wait_ping "$port"
	t0=$(date +%s%N)
	out=$(redis-cli -p "$port" --pipe <"$work/fill.resp")
	fill_s[$target]=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')
	if ! grep -q "errors: 0, replies: $RESTART_KEYS" <<<"$out" || ! dbsize_is "$port" "$RESTART_KEYS"; then
		echo "filling $target failed: $out" >&2
		exit 1
	fi
	stop
done
rm -f "$work/fill.resp"

# The rewritten copy: the redis-server's directory, then BGREWRITEAOF.
cp -a "$work/restart-redis" "$work/restart-redis-rewritten"
port=$(free_port)
start redis-rewritten "$port" everysec "$work/restart-redis-rewritten"
for _ in $(seq 6000); do
	dbsize_is "$port" "$RESTART_KEYS" && break
	sleep 0.02
done
redis-cli -p "$port" bgrewriteaof >/dev/null
for _ in $(seq 6000); do
	info=$(redis-cli -p "$port" info persistence | tr -d '\r')
	grep -q '^aof_rewrite_in_progress:0' <<<"$info" && grep -q '^aof_rewrite_scheduled:0' <<<"$info" &&
		grep -q '^aof_last_bgrewrite_status:ok' <<<"$info" && break
	sleep 0.1
done
if ! grep -q '^aof_rewrite_in_progress:0' <<<"$info" || ! ls "$work/restart-redis-rewritten/appendonlydir/"*.base.rdb >/dev/null; then
	echo "BGREWRITEAOF did not finish" >&2
	exit 1
fi
stop
fill_s[redis-rewritten]=${fill_s[redis]}

# The node's rewritten copy: its directory, then BGREWRITEAOF.
cp -a "$work/restart-node" "$work/restart-node-rewritten"
port=$(free_port)
start node "$port" everysec "$work/restart-node-rewritten"
for _ in $(seq 6000); do
	dbsize_is "$port" "$RESTART_KEYS" && break
	sleep 0.02
done
redis-cli -p "$port" bgrewriteaof >/dev/null
for _ in $(seq 6000); do
	info=$(redis-cli -p "$port" info persistence | tr -d '\r')
	grep -q '^aof_rewrite_in_progress:0' <<<"$info" && grep -q '^aof_rewrites:1' <<<"$info" && break
	sleep 0.1
done
if ! grep -q '^aof_rewrites:1' <<<"$info" || ! grep -q '^aof_last_bgrewrite_status:ok' <<<"$info"; then
	echo "the node's BGREWRITEAOF did not finish" >&2
	exit 1
fi
stop
fill_s[node-rewritten]=${fill_s[node]}
for target in redis redis-rewritten node node-rewritten; do
	disk[$target]=$(du -sb "$work/restart-$target" | awk '{ printf "%.2f", $1 / 1e9 }')
done

# restart_once target: the seconds from launch to a full DBSIZE, in
# restart_s (not printed: a command substitution's subshell would lose
# server_pid and its exit would not stop the script).
restart_once() {
	local target=$1 port t0 ns
	port=$(free_port)
	sync
	t0=$(date +%s%N)
	start "${target%-rewritten}" "$port" everysec "$work/restart-$target"
	until dbsize_is "$port" "$RESTART_KEYS"; do
		if ! kill -0 "$server_pid" 2>/dev/null; then
			echo "$target exited during its restart" >&2
			exit 1
		fi
		if (($(date +%s%N) - t0 > 600 * 1000000000)); then
			echo "$target did not load $RESTART_KEYS keys in 10 minutes" >&2
			exit 1
		fi
		sleep 0.02
	done
	ns=$(($(date +%s%N) - t0))
	stop
	restart_s=$(awk -v ns="$ns" 'BEGIN { printf "%.2f", ns / 1e9 }')
}

declare -A restarts
for round in $(seq "$RESTART_ROUNDS"); do
	order="redis redis-rewritten node node-rewritten"
	((round % 2)) || order="node-rewritten node redis-rewritten redis"
	for target in $order; do
		echo "restart round $round/$RESTART_ROUNDS, $target..." >&2
		restart_once "$target"
		restarts[$target]+="$restart_s "
	done
done

echo
echo "Restart time: $RESTART_KEYS keys of $VALUE_SIZE random bytes written once each (redis-cli --pipe)," \
	"appendfsync everysec, SIGTERM, then from launch until PING answers and DBSIZE is $RESTART_KEYS" \
	"(polled every 20 ms); files in the page cache; $RESTART_ROUNDS interleaved rounds"
echo
echo "| target | on disk (GB) | fill (s) | restart per round (s) | restart (s, median) | shardgate/target (medians) |"
echo "|--------|-------------:|---------:|-----------------------|--------------------:|---------------------------:|"
node_median=$(tr ' ' '\n' <<<"${restarts[node]}" | grep . | median)
for target in redis redis-rewritten node node-rewritten; do
	case $target in
	redis) name="redis-server (AOF of the SETs)" ;;
	redis-rewritten) name="redis-server (after BGREWRITEAOF: RDB preamble)" ;;
	node) name="shardgate node (log of the SETs)" ;;
	node-rewritten) name="shardgate node (after BGREWRITEAOF: snapshot)" ;;
	esac
	m=$(tr ' ' '\n' <<<"${restarts[$target]}" | grep . | median)
	printf '| %s | %s | %s | %s | %.2f | %.2f |\n' "$name" "${disk[$target]}" "${fill_s[$target]}" \
		"${restarts[$target]% }" "$m" "$(awk -v a="$node_median" -v b="$m" 'BEGIN { print a / b }')"
done
grep 'append-only log loaded' "$work/node.log" | tail -n 1 | sed 's/^/node: /'

[[ $REWRITE == 1 ]] || exit 0

# latency_run port: redis-benchmark SET with -P 1; its p99 and max (ms) go
# to lat_p99 and lat_max.
latency_run() {
	run_bench -h 127.0.0.1 -p "$1" -c "$CLIENTS" -n "$REWRITE_REQUESTS" -P 1 -t set -r "$KEYSPACE"
	lat_p99=$(awk -F'","' 'NR == 2 { print $7 }' "$work/out.csv")
	lat_max=$(awk -F'","' 'NR == 2 { v = $8; gsub(/"/, "", v); print v }' "$work/out.csv")
}

# rewrite_round target: start target on its rewritten 1 GB copy, a quiet
# run, then a run with a BGREWRITEAOF a second in.
declare -A rw
rewrite_round() {
	local target=$1 port info took pause
	port=$(free_port)
	sync
	start "$target" "$port" everysec "$work/restart-$target-rewritten"
	# At least the data (earlier rounds' benchmarks added their keys).
	until [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG &&
		$(redis-cli -p "$port" dbsize 2>/dev/null) -ge $RESTART_KEYS ]]; do sleep 0.05; done
	latency_run "$port"
	rw[$target,p99q]+="$lat_p99 "
	rw[$target,maxq]+="$lat_max "
	(sleep 1; redis-cli -p "$port" bgrewriteaof >/dev/null) &
	local trigger=$!
	latency_run "$port"
	wait "$trigger"
	rw[$target,p99r]+="$lat_p99 "
	rw[$target,maxr]+="$lat_max "
	for _ in $(seq 6000); do
		info=$(redis-cli -p "$port" info persistence | tr -d '\r')
		grep -q '^aof_rewrite_in_progress:0' <<<"$info" && grep -q '^aof_rewrite_scheduled:0' <<<"$info" && break
		sleep 0.05
	done
	case $target in
	redis)
		pause=$(redis-cli -p "$port" info stats | tr -d '\r' | sed -n 's/^latest_fork_usec://p')
		pause=$(awk -v u="$pause" 'BEGIN { printf "%.2f", u / 1000 }')
		took=$(sed -n 's/^aof_last_rewrite_time_sec://p' <<<"$info") # whole seconds
		;;
	node)
		local line
		line=$(grep 'append-only log rewrite done' "$work/node.log" | tail -n 1)
		pause=$(sed -n 's/.*longest_slot_pause=\([0-9.]*\)\(µs\|ms\|s\).*/\1 \2/p' <<<"$line" |
			awk '{ f = $2 == "µs" ? 0.001 : ($2 == "s" ? 1000 : 1); printf "%.2f", $1 * f }')
		took=$(sed -n 's/.* took=\([0-9.]*\)\(ms\|s\).*/\1 \2/p' <<<"$line" |
			awk '{ printf "%.1f", $2 == "ms" ? $1 / 1000 : $1 }')
		;;
	esac
	rw[$target,pause]+="$pause "
	rw[$target,took]+="$took "
	stop
}

for round in $(seq "$REWRITE_ROUNDS"); do
	order="redis node"
	((round % 2)) || order="node redis"
	for target in $order; do
		echo "rewrite round $round/$REWRITE_ROUNDS, $target..." >&2
		rewrite_round "$target"
	done
done

med() { tr ' ' '\n' <<<"$1" | grep . | median; }
echo
echo "Rewrite pauses: $RESTART_KEYS keys of $VALUE_SIZE bytes (about 1 GB) in memory, appendfsync everysec;" \
	"redis-benchmark SET -r $KEYSPACE, -P 1, $CLIENTS clients, $REWRITE_REQUESTS requests, quiet and with" \
	"BGREWRITEAOF a second in; medians of $REWRITE_ROUNDS interleaved rounds (per round in brackets)"
echo
echo "| server | rewrite took (s) | longest stop for the rewrite (ms) | client p99 quiet (ms) | client p99 during rewrite (ms) | client max quiet (ms) | client max during rewrite (ms) |"
echo "|--------|-----------------:|----------------------------------:|----------------------:|-------------------------------:|----------------------:|-------------------------------:|"
for target in redis node; do
	case $target in
	redis) name="redis-server (fork: latest_fork_usec)" ;;
	node) name="shardgate node (longest slot hold)" ;;
	esac
	printf '| %s | %s [%s] | %s [%s] | %s | %s | %s | %s |\n' "$name" \
		"$(med "${rw[$target,took]}")" "${rw[$target,took]% }" "$(med "${rw[$target,pause]}")" "${rw[$target,pause]% }" \
		"$(med "${rw[$target,p99q]}")" "$(med "${rw[$target,p99r]}")" "$(med "${rw[$target,maxq]}")" "$(med "${rw[$target,maxr]}")"
done
