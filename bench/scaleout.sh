#!/usr/bin/env bash
# Issue 8's scale-out figures: throughput and p50/p99 latency of a paced
# load through the proxy before, during and after online scale-outs, the
# time each took and the longest fence any node held.
#
# Two nodes bootstrap a gossip cluster and a proxy joins it; the load
# generator (bench/scaleload/cmd/scalephases) writes KEYS keys of every
# kind through the proxy, then runs a mix of reads and writes paced at
# RATE ops/s while: STEADY seconds pass (before); a third node joins and
# the planner moves slots until every node holds within 10% of an even
# share and no node migrates, queues or stages anything (during 2 → 3);
# STEADY seconds (between); a fourth node the same way (during 3 → 4);
# STEADY seconds (after); `shardgate cluster drain` empties node 2 (during
# drain); STEADY seconds (after drain). Then every key is verified. A
# step's time runs from starting the node (or the drain) to the balanced
# state, as polled every 0.1 s.
#
#   bash bench/scaleout.sh [KEYS [RATE [STEADY]]]   (default 200000 4000 5)
#
# Exit status: that of scalephases (0: verified and no client error).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib.sh
keys=${1:-200000}
rate=${2:-4000}
steady=${3:-5}
work=$(mktemp -d)
bin=$work/shardgate
go build -o "$bin" ./cmd/shardgate
go build -o "$work/scalephases" ./bench/scaleload/cmd/scalephases
pids=()
keep=false
cleanup() {
	exec 3>&-
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if $keep; then echo "logs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
field() { awk -F: -v k="$2" '$1==k{print $2}' <<<"$1"; }
status() { redis-cli -p "$1" shardgate status 2>/dev/null | tr -d '\r'; }

declare -A port gport
port[px]=$(free_port); gport[px]=$(free_port)
start_node() { # name [flags...]
	local n=$1
	shift
	port[$n]=$(free_port); gport[$n]=$(free_port)
	"$bin" node --addr "127.0.0.1:${port[$n]}" --gossip "127.0.0.1:${gport[$n]}" --join "127.0.0.1:${gport[1]}" \
		--dir "$work/n$n" --gossip-fast "$@" >"$work/n$n.log" 2>&1 3>&- &
	pids+=($!)
	wait_ping "${port[$n]}"
}

# settled succeeds when the nodes (names) are balanced: the one named by
# $drained owns no slot, every other within 10% of an even share, the
# owned slots add up to 16384, and no node migrates, queues or stages.
drained=
settled() {
	local active=$# total=0 n st owned d
	[[ -n $drained ]] && active=$((active - 1))
	for n in "$@"; do
		st=$(status "${port[$n]}") || return 1
		owned=$(field "$st" slots_owned)
		[[ -n $owned ]] || return 1
		total=$((total + owned))
		if [[ $n == "$drained" ]]; then
			((owned == 0)) || return 1
		else
			d=$((owned * active - 16384))
			((${d#-} * 10 <= 16384)) || return 1
		fi
		[[ -z $(field "$st" migrating_to) && $(field "$st" slots_queued) == 0 && $(field "$st" migrations_incoming) == 0 ]] || return 1
	done
	((total == 16384))
}
wait_settled() {
	for _ in $(seq 3000); do
		settled "$@" && return
		sleep 0.1
	done
	echo "nodes $* not balanced after 300 s" >&2
	keep=true
	exit 1
}

start_node 1 --bootstrap-expect 2
start_node 2 --bootstrap-expect 2
"$bin" proxy --addr "127.0.0.1:${port[px]}" --gossip "127.0.0.1:${gport[px]}" --join "127.0.0.1:${gport[1]}" \
	--gossip-fast >"$work/proxy.log" 2>&1 &
pids+=($!)
wait_ping "${port[px]}"
wait_settled 1 2
for _ in $(seq 300); do # until the proxy has the table
	ok=true
	for i in $(seq 32); do
		[[ $(redis-cli -p "${port[px]}" set "scaleout:probe:$i" x ex 60 2>&1) == OK ]] || ok=false
	done
	$ok && break
	sleep 0.1
done

mkfifo "$work/marks"
"$work/scalephases" -addr "127.0.0.1:${port[px]}" -keys "$keys" -rate "$rate" -first before \
	<"$work/marks" >"$work/phases.out" 2>"$work/phases.log" &
load=$!
pids+=($load)
# fd 3 stays open until the end: the load ends at the end of its input.
# Processes started from here on must not inherit it (3>&-), or the
# input would never end.
exec 3>"$work/marks"
until grep -q 'load running' "$work/phases.log"; do
	if ! kill -0 "$load" 2>/dev/null; then
		cat "$work/phases.log" >&2
		exit 2
	fi
	sleep 0.1
done

sleep "$steady"
echo "during 2 → 3" >&3
t=$(now)
start_node 3
wait_settled 1 2 3
took3=$(since "$t")
echo "between" >&3
sleep "$steady"
echo "during 3 → 4" >&3
t=$(now)
start_node 4
wait_settled 1 2 3 4
took4=$(since "$t")
echo "after" >&3
sleep "$steady"
echo "during drain of node 2" >&3
t=$(now)
"$bin" cluster drain --timeout 5m "127.0.0.1:${port[2]}" >"$work/drain.out" 3>&-
drained=2
wait_settled 1 2 3 4
tookd=$(since "$t")
echo "after drain" >&3
sleep "$steady"
exec 3>&-
rc=0
wait "$load" || rc=$?

echo "Scale-out under load: $keys keys, $rate ops/s paced, through the proxy ($(nproc) cores, $(date -u +%Y-%m-%d))."
echo
cat "$work/phases.out"
echo
echo "| step | took (s) |"
echo "|---|---:|"
echo "| 2 → 3 nodes | $took3 |"
echo "| 3 → 4 nodes | $took4 |"
echo "| drain node 2 | $tookd |"
echo
echo "| node | slots | migrations done | slots out | slots in | keys sent | MB sent | longest fence (ms) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
longest=0
for n in 1 2 3 4; do
	st=$(status "${port[$n]}")
	fence=$(field "$st" max_fence_us)
	((fence > longest)) && longest=$fence
	awk -v n="$n" -v s="$(field "$st" slots_owned)" -v m="$(field "$st" migrations_done)" \
		-v o="$(field "$st" slots_migrated_out)" -v i="$(field "$st" slots_migrated_in)" \
		-v k="$(field "$st" keys_sent)" -v b="$(field "$st" bytes_sent)" -v f="$fence" \
		'BEGIN{printf "| %s | %d | %d | %d | %d | %d | %.1f | %.1f |\n", n, s, m, o, i, k, b/1e6, f/1000}'
done
echo
awk -v f="$longest" 'BEGIN{printf "Longest fence across nodes: %.1f ms.\n", f/1000}'
if ((rc != 0)); then
	echo "scalephases exited $rc:" >&2
	grep -E 'error|mismatch' "$work/phases.log" >&2 || true
	keep=true
fi
exit "$rc"
