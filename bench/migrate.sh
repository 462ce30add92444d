#!/usr/bin/env bash
# Time to move one slot holding 10 MB between two shardgate nodes, and the
# fence it needed (issue 8's figure). Two nodes form a gossip cluster
# with --auto-rebalance=false; one slot is filled with 10 MB, either as
# 10,000 strings of 1 KB or as one list of 10,000 elements of 1 KB; the
# slot is moved back and forth ROUNDS times by SHARDGATE PLAN (what the
# planner sends), and each move's duration and fence are read from the
# source's SHARDGATE STATUS (last_migration_us, last_fence_us).
#
#   bash bench/migrate.sh [ROUNDS]    (default 5)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib.sh
rounds=${1:-5}
work=$(mktemp -d)
bin=$work/shardgate
go build -o "$bin" ./cmd/shardgate
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

p1=$(free_port); p2=$(free_port); g1=$(free_port); g2=$(free_port)
for i in 1 2; do
	port=p$i; gport=g$i
	"$bin" node --addr "127.0.0.1:${!port}" --gossip "127.0.0.1:${!gport}" --join "127.0.0.1:$g1" \
		--bootstrap-expect 2 --dir "$work/n$i" --gossip-fast --auto-rebalance=false >"$work/n$i.log" 2>&1 &
	pids+=($!)
done
wait_ping "$p1"; wait_ping "$p2"
for _ in $(seq 100); do
	[[ $(redis-cli -p "$p1" cluster info | tr -d '\r' | grep -c 'cluster_state:ok') == 1 ]] && break
	sleep 0.1
done
id1=$(redis-cli -p "$p1" cluster myid); id2=$(redis-cli -p "$p2" cluster myid)
tag=bench10mb
slot=$(redis-cli -p "$p1" cluster keyslot "$tag")
owner_port() {
	local line
	line=$(redis-cli -p "$p1" get "{$tag}" 2>&1 || true)
	if [[ $line == MOVED* ]]; then echo "${line##*:}"; else echo "$p1"; fi
}

fill() { # $1 = strings | list
	local port
	port=$(owner_port)
	redis-cli -p "$port" flushall >/dev/null
	python3 - "$1" "$tag" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import sys
kind, tag = sys.argv[1], sys.argv[2]
val = "x" * 1024
def cmd(*a):
    out = ["*%d\r\n" % len(a)]
    for x in a:
        out.append("$%d\r\n%s\r\n" % (len(x), x))
    sys.stdout.write("".join(out))
for i in range(10000):
    if kind == "strings":
        cmd("SET", "{%s}:%d" % (tag, i), val)
    else:
        cmd("RPUSH", "{%s}:list" % tag, val)
PY
}

move() { # prints: took_ms fence_ms
	local src dst dstid before
	src=$(owner_port)
	if [[ $src == "$p1" ]]; then dst=$p2; dstid=$id2; else dst=$p1; dstid=$id1; fi
	before=$(redis-cli -p "$src" shardgate status | tr -d '\r' | awk -F: '$1=="migrations_done"{print $2}')
	for _ in $(seq 400); do
		redis-cli -p "$src" shardgate plan "$dstid" "$slot" >/dev/null
		now=$(redis-cli -p "$src" shardgate status | tr -d '\r' | awk -F: '$1=="migrations_done"{print $2}')
		[[ $now != "$before" ]] && break
		sleep 0.05
	done
	redis-cli -p "$src" shardgate status | tr -d '\r' |
		awk -F: '$1=="last_migration_us"{t=$2} $1=="last_fence_us"{f=$2} $1=="last_migration_keys"{k=$2} END{printf "%.1f %.2f %d\n", t/1000, f/1000, k}'
}

echo "| data in the slot | round | move (ms) | fence (ms) | keys sent |"
echo "|---|---:|---:|---:|---:|"
for kind in strings list; do
	fill "$kind"
	for r in $(seq "$rounds"); do
		read -r took fence keys < <(move)
		echo "| 10 MB as $kind | $r | $took | $fence | $keys |"
	done
done
