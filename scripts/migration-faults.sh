#!/usr/bin/env bash
# Runs the migration fault test (e2e TestMigrationFaults) nightly-style:
# many seeded runs that SIGKILL the source or the target of online slot
# migrations at random points while writers keep incrementing counters
# and pushing onto lists, then check that no key or acknowledged write is
# lost, nothing is duplicated and the slot tables converge. CI runs 20
# (5 under -race); this runs more. Each run takes about 6 s on 2 cores.
#
# Usage: scripts/migration-faults.sh [RUNS]      (default 200)
# SHARDGATE_FAULT_SEED=<seed> fixes the first seed (default: the time);
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

# A generous bound: a run that hangs fails on its own settle wait (60 s).
timeout=$((runs * 90 + 300))s
echo "migration-faults: $runs runs (go test timeout $timeout)" >&2
SHARDGATE_FAULT_RUNS=$runs exec go test ./e2e/ -run '^TestMigrationFaults$' -count=1 -v -timeout "$timeout"
