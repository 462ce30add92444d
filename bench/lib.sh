# Shared helpers of the bench/*.sh scripts; source it, do not run it.

# free_port prints a TCP port nothing listens on (the kernel-assigned port
# of a throwaway listener would be better, but bash has none). It picks
# below 32768, where Linux's outgoing connections take their local ports
# (a port in use by one refuses connections, so it looks free, but it
# cannot be bound).
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 12000))
		if command -v ss >/dev/null && [[ -n $(ss -Htan "sport = :$p") ]]; then
			continue
		fi
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "no free port found" >&2
	exit 1
}

# wait_ping waits until something answers PING on a port.
wait_ping() {
	local port=$1
	for _ in $(seq 200); do
		if [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; then
			return
		fi
		sleep 0.05
	done
	echo "nothing answers PING on port $port" >&2
	exit 1
}

# start_three_targets starts what bench/lists.sh and bench/streams.sh
# compare: a plain redis-server, one shardgate node, and the shardgate
# proxy over 3 more nodes ($work/shardgate, built by the caller), and waits
# until all answer. It appends their pids to pids and sets redis_port,
# node_port, proxy_port and the associative array port (redis, node, proxy).
# Uses work, NODE_PROCS and PROXY_FLAGS.
start_three_targets() {
	local i p backends=()
	redis_port=$(free_port)
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no --dir "$work" --logfile "$work/redis.log" &
	pids+=($!)
	node_port=$(free_port)
	"$work/shardgate" node --addr "127.0.0.1:$node_port" --procs "$NODE_PROCS" --log-level warn 2>"$work/node.log" &
	pids+=($!)
	for i in 1 2 3; do
		p=$(free_port)
		"$work/shardgate" node --addr "127.0.0.1:$p" --procs "$NODE_PROCS" --log-level warn 2>"$work/node$i.log" &
		pids+=($!)
		backends+=("127.0.0.1:$p")
	done
	proxy_port=$(free_port)
	# shellcheck disable=SC2086 # PROXY_FLAGS is deliberately split
	"$work/shardgate" proxy --addr "127.0.0.1:$proxy_port" --nodes "$(IFS=,; echo "${backends[*]}")" \
		--log-level warn $PROXY_FLAGS 2>"$work/proxy.log" &
	pids+=($!)
	for p in "$redis_port" "$node_port" "$proxy_port" "${backends[@]##*:}"; do wait_ping "$p"; done
	declare -gA port=([redis]=$redis_port [node]=$node_port [proxy]=$proxy_port)
}

# bench_init NAME makes the scratch directory work and arranges for the
# processes in pids, and bench_pid (a benchmark run in the background so
# that a signal interrupts the wait for it), to be stopped and work
# removed when the script exits.
#
# With SCHED=batch it first puts the script under Linux's SCHED_BATCH
# policy (chrt -b), which every process it starts inherits: the servers of
# every target alike, and the benchmark client. On two shared cores a
# process that writes to another one on the same machine (the benchmark to
# a server, the proxy to a node) is otherwise preempted by the process it
# woke, at every write, so co-located processes take turns on the cores
# one request at a time; a woken SCHED_BATCH process waits for the running
# one to block or for the next tick instead, and finds more work waiting
# when it runs. sched_policy names the policy for the scripts' headers.
bench_init() {
	sched_policy=other
	case ${SCHED:-} in
	'' | other) ;;
	batch)
		require chrt
		chrt -b -p 0 $$ >/dev/null || { echo "chrt -b -p 0 failed" >&2; exit 1; }
		sched_policy=batch
		;;
	*) echo "unknown SCHED=$SCHED (other, batch)" >&2; exit 2 ;;
	esac
	work=$(mktemp -d "${TMPDIR:-/tmp}/shardgate-$1.XXXXXX")
	pids=()
	bench_pid=
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

bench_cleanup() {
	local pid
	for pid in $bench_pid "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}

# require TOOL... exits unless every tool is on PATH.
require() {
	local tool
	for tool; do
		command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
	done
}

# awk_median is an awk function, median(list), giving the median of a
# space-separated list of numbers; put it in front of an awk program:
# awk "$awk_median"'{ ... median(x) ... }'.
# shellcheck disable=SC2034 # used by the scripts that source this file
awk_median='
	function median(list,    n, a, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}'
