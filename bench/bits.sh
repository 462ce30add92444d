#!/usr/bin/env bash
# Compare a shardgate node with redis-server on the bitmap commands
# (SETBIT, GETBIT, BITCOUNT on a 1 MB key at -P 16 with 50 clients, and
# BITCOUNT latency over a 512 MB bitmap). Builds shardgate, starts one node
# and one redis-server on free ports, runs bench/bits (a Go load tool:
# redis-benchmark's zero-padded __rand_int__ is not a valid bit offset)
# with interleaved rounds, prints a Markdown table (requests per second
# and each server's CPU time per request) and cleans up.
# Companion of bench/node-vs-redis.sh, which covers the strings commands.
#
# Environment: ROUNDS (3), REQUESTS (1000000 per SETBIT or GETBIT run),
# BITCOUNT_REQUESTS (20000: each counts 1 MB), CLIENTS (50), PIPELINE (16),
# TESTS (setbit,getbit,bitcount,bitcount512), NODE_PORT, REDIS_PORT,
# NODE_PROCS (--procs of the node, default 0: Go's default threads), SCHED
# (other or batch: see bench_init in lib.sh).
# redis-server allocates 512 MB for the bitcount512 key while it runs.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-1000000}
BITCOUNT_REQUESTS=${BITCOUNT_REQUESTS:-20000}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-16}
TESTS=${TESTS:-setbit,getbit,bitcount,bitcount512}
NODE_PROCS=${NODE_PROCS:-0}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_init bits
require go redis-server redis-cli


NODE_PORT=${NODE_PORT:-$(free_port)}
REDIS_PORT=${REDIS_PORT:-$(free_port)}

echo "building shardgate and bench/bits..." >&2
(cd "$root" && go build -o "$work/shardgate" ./cmd/shardgate && go build -o "$work/bits" ./bench/bits)
"$work/shardgate" node --addr "127.0.0.1:$NODE_PORT" --procs "$NODE_PROCS" --log-level warn 2>"$work/node.log" &
node_pid=$!
pids+=("$node_pid")
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--daemonize no --dir "$work" --logfile "$work/redis.log" &
redis_pid=$!
pids+=("$redis_pid")

wait_ping "$NODE_PORT"
wait_ping "$REDIS_PORT"

echo "shardgate node vs redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), bitmap commands," \
	"$CLIENTS clients, $REQUESTS requests ($BITCOUNT_REQUESTS for BITCOUNT), $ROUNDS interleaved rounds, scheduling $sched_policy"
"$work/bits" -redis "127.0.0.1:$REDIS_PORT" -node "127.0.0.1:$NODE_PORT" \
	-rounds "$ROUNDS" -n "$REQUESTS" -n-bitcount "$BITCOUNT_REQUESTS" -c "$CLIENTS" -P "$PIPELINE" -t "$TESTS" \
	-redis-pid "$redis_pid" -node-pid "$node_pid"
