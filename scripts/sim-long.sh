#!/usr/bin/env bash
# Long runs of the seeded simulations of core/fleet: the ownership protocol
# (TestSimulation) and the node log (TestNodeLogSimulation). CI runs 10,000
# seeds of each; this runs SEEDS (default 1,000,000) of the one named by
# WHICH (nodelog, ownership or both; default nodelog), on every core, and
# prints the command that replays the first failing seed.
#
#   scripts/sim-long.sh                 # 1,000,000 seeds of the node log
#   SEEDS=200000 WHICH=both scripts/sim-long.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${SEEDS:-1000000}
which=${WHICH:-nodelog}
case $which in
nodelog) run='^TestNodeLogSimulation$' ;;
ownership) run='^TestSimulation$' ;;
both) run='^(TestSimulation|TestNodeLogSimulation)$' ;;
*) echo "WHICH must be nodelog, ownership or both" >&2; exit 2 ;;
esac
echo "== $seeds seeds of $run ($(nproc) cores), started $(date -u +%FT%TZ)"
start=$(date +%s)
go test ./core/fleet -run "$run" -count=1 -timeout 0 -v -sim.seeds="$seeds" | grep -E '^(---|ok|FAIL|PASS)|seed|replay' || true
echo "== done in $(( $(date +%s) - start )) s"
