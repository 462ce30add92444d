#!/usr/bin/env bash
# Side-by-side benchmark of the shardgate proxy (issue 4, item 9).
#
# Builds shardgate and starts, on free loopback ports:
#   redis    one plain redis-server (the reference column);
#   proxy    (a) `shardgate proxy --cross-slot split` over 3 shardgate nodes;
#   node     (b) one shardgate node, directly;
#   twem     (c) twemproxy (Debian package nutcracker; fnv1a_64, ketama, no
#            auto-eject) over 3 plain redis-servers;
#   cluster  (d) a 3-master Redis Cluster (redis-server --cluster-enabled yes,
#            redis-cli --cluster create), driven by redis-benchmark --cluster
#            --threads 1 (without --threads 1 its figures snap to n/0.25 s).
# Then it runs redis-benchmark for each test at each -P against every target
# in turn, interleaved (redis proxy node twem cluster, redis proxy ... ) for
# ROUNDS rounds, and prints Markdown tables: median requests per second per
# target with the ratios (a)/(b), (a)/(c), (a)/redis and the per-round
# (a)/(b) ratios; then the median p99 latency per target (redis-benchmark
# --csv reports p99 per run).
#
# Tests (random keys, -r KEYSPACE):
#   get, set   redis-benchmark -t get / -t set;
#   setbit     SETBIT bm:__rand_int__ 7 1 (the random part is the key: a
#              zero-padded __rand_int__ is no valid bit offset);
#   bitcount   BITCOUNT bm:__rand_int__ (keys filled by setbit);
#   mset       -t mset: 10 random keys, so in different slots. The proxy
#              splits it by node (--cross-slot split), twemproxy splits it
#              natively. A shardgate node refuses it with CROSSSLOT, as does
#              a Redis Cluster, so (b) and (d) run the same MSET with its 10
#              keys under one {tag} (key:{tag}:__rand_int__): one slot, one
#              node, less work than a split. Such cells are marked with †.
#   msettag    "MSET {tag}" in the tables: the one-slot MSET above on every
#              target (twemproxy has hash_tag "{}"), so every column does
#              the same work and (a)/(b) compares like with like.
# In cluster mode the key of a custom command must contain {tag}
# (bm:{tag}:__rand_int__), which redis-benchmark replaces per node.
# Each target and test is first tried with a short run: one that fails
# (error reply, missing command) is shown as n/a with the reason.
#
# If the shardgate binary has no `proxy` subcommand yet, (a) is skipped with
# a message and the rest still runs.
#
# The machine's cores are shared by the benchmark client, the proxies and
# the servers; differences under ~15% are noise. A third table gives the CPU
# time per request (user plus system, from /proc) of each target's own
# processes (the proxy and its 3 nodes; twemproxy and its 3 redis-servers;
# ...) and of redis-benchmark driving it: with every process on the same
# 2 cores, throughput follows the sum of the two.
#
# Environment:
#   ROUNDS      interleaved rounds (default 3)
#   REQUESTS    requests per redis-benchmark run (default 200000)
#   CLIENTS     parallel connections (default 50)
#   PIPELINES   pipeline depths (default "1 16")
#   KEYSPACE    random key range (default 100000)
#   TESTS       tests to run (default "get set setbit bitcount mset msettag")
#   TARGETS     targets to run (default "redis proxy node twem cluster")
#   NODE_PROCS  --procs of every shardgate node (default 0: Go's default)
#   SCHED       other (default) or batch: run everything under SCHED_BATCH
#               (see bench_init in lib.sh)
#   PROXY_FLAGS extra flags for `shardgate proxy` (added after --addr,
#               --nodes and, when the proxy knows them, --cross-slot split
#               and --log-level warn)
#
# Needs go, redis-server, redis-cli, redis-benchmark (Redis 7) and
# nutcracker (apt-get install nutcracker; forbid its service start with a
# policy-rc.d, as .ci/run does for redis-server).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
KEYSPACE=${KEYSPACE:-100000}
TESTS=${TESTS:-"get set setbit bitcount mset msettag"}
TARGETS=${TARGETS:-"redis proxy node twem cluster"}
NODE_PROCS=${NODE_PROCS:-0}
PROXY_FLAGS=${PROXY_FLAGS:-}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_init proxy-bench
require go redis-server redis-cli redis-benchmark

declare -A want=()
for t in $TARGETS; do
	case $t in
	redis | proxy | node | twem | cluster) want[$t]=1 ;;
	*) echo "unknown target $t (redis proxy node twem cluster)" >&2; exit 2 ;;
	esac
done
for t in $TESTS; do
	case $t in
	get | set | setbit | bitcount | mset | msettag) ;;
	*) echo "unknown test $t (get set setbit bitcount mset msettag)" >&2; exit 2 ;;
	esac
done
if [[ -n ${want[twem]:-} ]] && ! command -v nutcracker >/dev/null; then
	echo "missing nutcracker (twemproxy): apt-get install -y nutcracker, or TARGETS without twem" >&2
	exit 1
fi

# next_port [bus]: set P to a free port not handed out before (not in a
# command substitution, which would lose the record); with "bus",
# P+10000 (a cluster node's bus port) is free too. Ports stay below the
# kernel's ephemeral range (32768 up by default): a port that is the local
# end of someone's outgoing connection refuses connections (so free_port
# of lib.sh takes it for free) but cannot be bound. ss, when present, also
# sees those.
used=" "
P=
port_free() {
	[[ $used != *" $1 "* ]] || return 1
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null || return 1
	! command -v ss >/dev/null || [[ -z $(ss -Htan "sport = :$1") ]]
}
next_port() {
	local p
	for _ in $(seq 100); do
		if [[ ${1:-} == bus ]]; then
			p=$((10000 + RANDOM % 12000))
			port_free "$((p + 10000))" || continue
			used+="$((p + 10000)) "
		else
			p=$((20000 + RANDOM % 12000))
		fi
		port_free "$p" || continue
		used+="$p "
		P=$p
		return
	done
	echo "no free port found" >&2
	exit 1
}

# up port: wait_ping, and on failure show the log of what should listen
# there (logof[port]).
declare -A logof=()
up() {
	(wait_ping "$1") && return
	echo "its log, ${logof[$1]:-none}:" >&2
	tail -n 20 "${logof[$1]:-/dev/null}" >&2
	exit 1
}

# tpids[target]: the target's own processes, whose CPU time is counted;
# tfront[target]: of those, the proxy in front (shardgate proxy, twemproxy).
declare -A tpids=() tfront=()

# start_redis target name port [flags...]: start a redis-server in the
# foreground.
start_redis() {
	local target=$1 name=$2 p=$3
	shift 3
	mkdir -p "$work/$name"
	logof[$p]=$work/$name/redis.log
	redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no --dir "$work/$name" --logfile "$work/$name/redis.log" "$@" &
	pids+=($!)
	tpids[$target]+=" $!"
}

# start_node target name port
start_node() {
	logof[$3]=$work/$2.log
	"$work/shardgate" node --addr "127.0.0.1:$3" --procs "$NODE_PROCS" --log-level warn 2>"$work/$2.log" &
	pids+=($!)
	tpids[$1]+=" $!"
}

echo "building shardgate..." >&2
(cd "$root" && go build -o "$work/shardgate" ./cmd/shardgate)

declare -A tport=() tflags=() skip=()

if [[ -n ${want[proxy]:-} ]]; then
	if "$work/shardgate" proxy --help >"$work/proxy-help.txt" 2>&1; then
		next_port
		tport[proxy]=$P
		backends=()
		for i in 1 2 3; do
			next_port
			start_node proxy "proxy-node$i" "$P"
			backends+=("127.0.0.1:$P")
		done
		pflags=()
		grep -q -- '-cross-slot' "$work/proxy-help.txt" && pflags+=(--cross-slot split)
		grep -q -- '-log-level' "$work/proxy-help.txt" && pflags+=(--log-level warn)
		for b in "${backends[@]}"; do up "${b##*:}"; done
		# shellcheck disable=SC2086 # PROXY_FLAGS is deliberately split
		"$work/shardgate" proxy --addr "127.0.0.1:${tport[proxy]}" \
			--nodes "$(IFS=,; echo "${backends[*]}")" "${pflags[@]}" $PROXY_FLAGS 2>"$work/proxy.log" &
		pids+=($!)
		tpids[proxy]+=" $!"
		tfront[proxy]=$!
		logof[${tport[proxy]}]=$work/proxy.log
		proxy_backends=("${backends[@]}")
	else
		echo "(a) skipped: this shardgate has no proxy subcommand yet" >&2
		skip[proxy]="no \`shardgate proxy\` in this build"
	fi
fi

if [[ -n ${want[node]:-} ]]; then
	next_port
	tport[node]=$P
	start_node node node "${tport[node]}"
fi

if [[ -n ${want[redis]:-} ]]; then
	next_port
	tport[redis]=$P
	start_redis redis redis "${tport[redis]}"
fi

if [[ -n ${want[twem]:-} ]]; then
	next_port
	tport[twem]=$P
	twem_backends=()
	for i in 1 2 3; do
		next_port
		start_redis twem "twem-redis$i" "$P"
		twem_backends+=("127.0.0.1:$P")
	done
	{
		echo "bench:"
		echo "  listen: 127.0.0.1:${tport[twem]}"
		echo "  redis: true"
		echo "  hash: fnv1a_64"
		echo "  hash_tag: \"{}\""
		echo "  distribution: ketama"
		echo "  auto_eject_hosts: false"
		echo "  preconnect: true"
		echo "  servers:"
		for i in 0 1 2; do
			echo "   - ${twem_backends[$i]}:1 r$((i + 1))"
		done
	} >"$work/twemproxy.yml"
	for b in "${twem_backends[@]}"; do up "${b##*:}"; done
	# -s: its stats port (default 22222) must not be a fixed port.
	next_port
	nutcracker -c "$work/twemproxy.yml" -s "$P" -a 127.0.0.1 -o "$work/twemproxy.log" &
	pids+=($!)
	tpids[twem]+=" $!"
	tfront[twem]=$!
	logof[${tport[twem]}]=$work/twemproxy.log
fi

if [[ -n ${want[cluster]:-} ]]; then
	cluster_nodes=()
	for i in 1 2 3; do
		next_port bus
		start_redis cluster "cluster$i" "$P" --cluster-enabled yes --cluster-config-file nodes.conf
		cluster_nodes+=("127.0.0.1:$P")
	done
	tport[cluster]=${cluster_nodes[0]##*:}
	tflags[cluster]="--cluster --threads 1"
	for n in "${cluster_nodes[@]}"; do up "${n##*:}"; done
	if ! redis-cli --cluster create "${cluster_nodes[@]}" --cluster-yes >"$work/cluster-create.log" 2>&1; then
		cat "$work/cluster-create.log" >&2
		exit 1
	fi
	for n in "${cluster_nodes[@]}"; do
		for _ in $(seq 200); do
			[[ $(redis-cli -p "${n##*:}" cluster info) != *cluster_state:ok* ]] || break
			sleep 0.05
		done
		[[ $(redis-cli -p "${n##*:}" cluster info) == *cluster_state:ok* ]] ||
			{ echo "Redis Cluster node $n is not ok" >&2; exit 1; }
	done
fi

for t in redis proxy node twem; do
	[[ -n ${tport[$t]:-} ]] || continue
	up "${tport[$t]}"
done

# set_args target test: set the array args to redis-benchmark's test
# arguments. MSET on (b) and (d) is the one-slot form (see the top).
declare -A same_slot=([node]=1 [cluster]=1)
args=()
set_args() {
	local target=$1 test=$2 tag=
	[[ $target != cluster ]] || tag="{tag}:"
	case $test in
	get | set) args=(-t "$test" -r "$KEYSPACE") ;;
	setbit) args=(-r "$KEYSPACE" SETBIT "bm:${tag}__rand_int__" 7 1) ;;
	bitcount) args=(-r "$KEYSPACE" BITCOUNT "bm:${tag}__rand_int__") ;;
	mset)
		if [[ -n ${same_slot[$target]:-} ]]; then
			args=(-r "$KEYSPACE" MSET)
			for _ in $(seq 10); do args+=("key:{tag}:__rand_int__" xxx); done
		else
			args=(-t mset -r "$KEYSPACE")
		fi
		;;
	msettag)
		args=(-r "$KEYSPACE" MSET)
		for _ in $(seq 10); do args+=("key:{tag}:__rand_int__" xxx); done
		;;
	esac
}

# run target test pipeline requests: one redis-benchmark run; the CSV goes
# to $work/out.csv, errors to $work/err.txt; returns its exit status.
run() {
	local target=$1 test=$2 p=$3 n=$4 rc=0
	set_args "$target" "$test"
	# In the background, so that a signal to this script interrupts the
	# wait and the cleanup stops the benchmark too.
	# shellcheck disable=SC2086 # tflags is deliberately split
	redis-benchmark -h 127.0.0.1 -p "${tport[$target]}" ${tflags[$target]:-} \
		-c "$CLIENTS" -n "$n" -P "$p" -q --csv "${args[@]}" >"$work/out.csv" 2>"$work/err.txt" &
	bench_pid=$!
	wait "$bench_pid" || rc=$?
	bench_pid=
	return "$rc"
}

# cpu_ticks pid...: user plus system time of the processes, in clock ticks.
cpu_ticks() {
	local pid sum=0 f
	for pid in "$@"; do
		read -ra f <"/proc/$pid/stat"
		# Fields 14 and 15 (utime, stime), counting from 1; the command
		# name (field 2) has no spaces for these programs.
		sum=$((sum + f[13] + f[14]))
	done
	echo "$sum"
}

# child_ticks: the CPU time of this shell's waited-for children (fields 16
# and 17, cutime and cstime): redis-benchmark's, read around each run.
child_ticks() {
	local f
	read -ra f <"/proc/$$/stat"
	echo $((f[15] + f[16]))
}
tick_us=$((1000000 / $(getconf CLK_TCK)))

# Preflight: a short run of each test on each target; a failing one is n/a.
declare -A na=()
active=()
for t in redis proxy node twem cluster; do
	[[ -n ${want[$t]:-} && -z ${skip[$t]:-} ]] && active+=("$t")
done
for t in "${active[@]}"; do
	for test in $TESTS; do
		if ! run "$t" "$test" 1 200; then
			na[$t,$test]=$(grep -v '^WARNING' "$work/err.txt" | head -1)
			echo "n/a: $test on $t: ${na[$t,$test]}" >&2
		fi
	done
done

results=$work/results.csv # round,pipeline,target,test,rps,p99,server_us,client_us,front_us
: >"$results"
for round in $(seq "$ROUNDS"); do
	for p in $PIPELINES; do
		echo "round $round/$ROUNDS, -P $p..." >&2
		for test in $TESTS; do
			for t in "${active[@]}"; do
				[[ -z ${na[$t,$test]:-} ]] || continue
				row=
				# shellcheck disable=SC2086 # the pid list is deliberately split
				server0=$(cpu_ticks ${tpids[$t]}) client0=$(child_ticks) front0=$(cpu_ticks ${tfront[$t]:-})
				if run "$t" "$test" "$p" "$REQUESTS"; then
					# shellcheck disable=SC2086
					server1=$(cpu_ticks ${tpids[$t]}) client1=$(child_ticks) front1=$(cpu_ticks ${tfront[$t]:-})
					row=$(awk -F'","' '/^"/ && $1 != "\"test" { print $2 "," $7; exit }' "$work/out.csv")
					[[ -n $row ]] || echo "no CSV row in redis-benchmark's output" >"$work/err.txt"
					row+=,$(awk -v a=$(((server1 - server0) * tick_us)) -v b=$(((client1 - client0) * tick_us)) \
						-v c=$(((front1 - front0) * tick_us)) -v n="$REQUESTS" \
						'BEGIN { printf "%.2f,%.2f,%.2f", a / n, b / n, c / n }')
				fi
				if [[ -z $row ]]; then
					echo "$test -P $p on $t failed: $(grep -v '^WARNING' "$work/err.txt" | head -1)" >&2
					row=err,err,err,err,err
				fi
				echo "$round,$p,$t,$test,$row" >>"$results"
			done
		done
	done
done

marks=
for t in "${active[@]}"; do
	[[ -z ${same_slot[$t]:-} || " $TESTS " != *" mset "* ]] || marks+="$t "
done

echo
echo "shardgate proxy side by side: redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')," \
	"$(nutcracker --version 2>&1 | sed -n 's/This is //p' | head -1)," \
	"$CLIENTS clients, $REQUESTS requests per run, $ROUNDS rounds, $(nproc) cores, scheduling $sched_policy, node --procs $NODE_PROCS"
echo
echo "(a) proxy over 3 nodes, (b) one node, (c) twemproxy over 3 redis-servers, (d) 3-master Redis Cluster" \
	"(redis-benchmark --cluster --threads 1); median requests per second."
[[ -z $marks ]] || echo "† 10 keys in one slot (a {tag}), not cross-slot."
for t in redis proxy node twem cluster; do
	[[ -z ${skip[$t]:-} ]] || echo "$t: n/a, ${skip[$t]}."
done
for k in "${!na[@]}"; do
	echo "${k%,*}: ${k#*,} n/a: ${na[$k]}"
done
echo
awk -F, -v rounds="$ROUNDS" -v marks=" $marks" '
	function median(list,    n, a, i, j, t) {
		n = split(list, a, " ")
		if (n == 0) return "n/a"
		for (i = 1; i <= n; i++) if (a[i] == "err") return "err"
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function num(v) { return v != "" && v != "n/a" && v != "err" }
	function fmt(v, dec) { return num(v) ? sprintf("%." dec "f", v) : v }
	function ratio(x, y) { return num(x) && num(y) && y > 0 ? sprintf("%.2f", x / y) : "n/a" }
	function label(test) { return test == "msettag" ? "MSET {tag}" : toupper(test) }
	function cell(t, test, v) { return fmt(v, 0) (test == "mset" && index(marks, " " t " ") ? " †" : "") }
	{
		key = $4 SUBSEP $2
		if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
		vals[key, $3] = vals[key, $3] " " $5
		lat[key, $3] = lat[key, $3] " " $6
		scpu[key, $3] = scpu[key, $3] " " $7
		ccpu[key, $3] = ccpu[key, $3] " " $8
		fcpu[key, $3] = fcpu[key, $3] " " $9
		rps[key, $3, $1] = $5
	}
	END {
		nt = split("redis proxy node twem cluster", T, " ")
		print "| test | -P | redis | (a) proxy | (b) node | (c) twemproxy | (d) cluster | (a)/(b) | (a)/(c) | (a)/redis | per-round (a)/(b) |"
		print "|------|---:|------:|----------:|---------:|--------------:|------------:|--------:|--------:|----------:|-------------------|"
		for (k = 1; k <= nkeys; k++) {
			key = order[k]; split(key, parts, SUBSEP)
			for (i = 1; i <= nt; i++) m[T[i]] = median(vals[key, T[i]])
			per = ""
			for (r = 1; r <= rounds; r++)
				per = per (r > 1 ? " " : "") ratio(rps[key, "proxy", r], rps[key, "node", r])
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", label(parts[1]), parts[2],
				cell("redis", parts[1], m["redis"]), cell("proxy", parts[1], m["proxy"]), cell("node", parts[1], m["node"]),
				cell("twem", parts[1], m["twem"]), cell("cluster", parts[1], m["cluster"]),
				ratio(m["proxy"], m["node"]), ratio(m["proxy"], m["twem"]), ratio(m["proxy"], m["redis"]), per
		}
		print ""
		print "p99 latency, ms (median over rounds):"
		print ""
		print "| test | -P | redis | (a) proxy | (b) node | (c) twemproxy | (d) cluster |"
		print "|------|---:|------:|----------:|---------:|--------------:|------------:|"
		for (k = 1; k <= nkeys; k++) {
			key = order[k]; split(key, parts, SUBSEP)
			line = "| " label(parts[1]) " | " parts[2] " |"
			for (i = 1; i <= nt; i++) line = line " " fmt(median(lat[key, T[i]]), 3) " |"
			print line
		}
		print ""
		print "CPU µs per request (median over rounds): the target processes (of which the proxy in front)"
		print "+ redis-benchmark driving them:"
		print ""
		print "| test | -P | redis | (a) proxy | (b) node | (c) twemproxy | (d) cluster |"
		print "|------|---:|------:|----------:|---------:|--------------:|------------:|"
		for (k = 1; k <= nkeys; k++) {
			key = order[k]; split(key, parts, SUBSEP)
			line = "| " label(parts[1]) " | " parts[2] " |"
			for (i = 1; i <= nt; i++) {
				sv = median(scpu[key, T[i]]); cv = median(ccpu[key, T[i]]); fv = median(fcpu[key, T[i]])
				front = (T[i] == "proxy" || T[i] == "twem") && num(fv) ? " (" fmt(fv, 1) ")" : ""
				line = line " " (num(sv) ? fmt(sv, 1) front " + " fmt(cv, 1) : sv) " |"
			}
			print line
		}
	}' "$results"

# Where the keys went: a proxy that sends everything to one node would
# still post good figures.
echo
spread() {
	local name=$1 out= b
	shift
	for b in "$@"; do out+=" $(redis-cli -p "${b##*:}" dbsize)"; done
	echo "keys per backend, $name:$out"
}
[[ -z ${proxy_backends[*]:-} || -n ${skip[proxy]:-} ]] || spread "(a) proxy nodes" "${proxy_backends[@]}"
[[ -z ${twem_backends[*]:-} ]] || spread "(c) twemproxy redis-servers" "${twem_backends[@]}"
[[ -z ${cluster_nodes[*]:-} ]] || spread "(d) cluster masters" "${cluster_nodes[@]}"
