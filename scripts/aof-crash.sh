#!/usr/bin/env bash
# Runs the crash test (e2e TestAOFCrash) nightly-style: many seeded runs
# that SIGKILL a standalone node with an append-only log (--appendfsync
# always, everysec for one seed in four) under a load of every kind of
# write (scaleload's strings with TTLs, bitmaps, HLLs, reliable queues,
# streams with XREADGROUP/XACK/XCLAIM, plus blocked BLMOVE and XREADGROUP
# served by pushes), restart it from its --dir on the same port while the
# load keeps running, and check that every acknowledged write is there.
# CI runs 20 (5 under -race); this runs more. Each run takes about 5 s on
# 2 cores.
#
# Usage: scripts/aof-crash.sh [RUNS]      (default 200)
# SHARDGATE_CRASH_SEED=<seed> fixes the first seed (default: the time);
# a failing run prints its seed and how to rerun it alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=${1:-200}
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 [RUNS]   (RUNS: a positive number, default 200)" >&2
	exit 2
fi
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
	export PATH=$PATH:/usr/local/go/bin
fi

# A generous bound: a run that hangs fails on its own 2-minute context.
timeout=$((runs * 30 + 300))s
echo "aof-crash: $runs runs (go test timeout $timeout)" >&2
SHARDGATE_CRASH_RUNS=$runs exec go test ./e2e/ -run '^TestAOFCrash$' -count=1 -v -timeout "$timeout"
