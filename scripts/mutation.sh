#!/usr/bin/env bash
# Mutation score of the files whose tests the project relies on most (see
# docs/testing.md). Slow: every mutant is compiled and tested on its own.
# Not part of CI's default path.
#
#   scripts/mutation.sh [cell|fs|fleet|ltx|httperr|all] [-only "<file>:<line>:<col> <TYPE>[,...]"]
#
# gremlins (v0.5.0, fetched through the Go module proxy by `go run`) only
# lists the mutants (a dry run); scripts/mutation applies each through
# `go test -overlay`, so the sources are never edited, and runs the tests
# that exercise the file, including suites in other modules: core/cell is
# tested by its own tests and by celltest run from drivers/wasm.
# Equivalent mutants are listed in scripts/mutation/equivalent.txt.
#
# Each test command has a time limit above what the unmutated tests take,
# so a hang kills a mutant but a slow pass does not. celltest's cases take
# a few seconds and get 90 s; its twins take about two minutes (each twin
# waits out a timer of 10 to 40 s) and run last, with 300 s.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-all}
shift || true
gremlins="github.com/go-gremlins/gremlins/cmd/gremlins@v0.5.0"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tool="$work/mutation"
(cd "$root/scripts/mutation" && GOWORK=off go build -o "$tool" main.go)

# mutants <module dir> <package> <out.json>: gremlins' list of mutants.
mutants() {
	(cd "$1" && go run "$gremlins" unleash --dry-run --silent -o "$3" "$2" >/dev/null)
}

# cover <out> <dir> <coverpkg> <go test args...>: a coverage profile.
cover() {
	local out=$1 dir=$2 pkg=$3
	shift 3
	(cd "$dir" && go test -count=1 -coverpkg="$pkg" -coverprofile="$out" "$@" >/dev/null)
}

run_cell() {
	echo "== core/cell: gate.go commit.go tracker.go alarm.go alarmstate.go"
	mutants "$root/core" ./cell "$work/cell.json"
	cover "$work/c1.out" "$root/core" github.com/cellb/cellb/core/cell ./cell
	cover "$work/c2.out" "$root/drivers/wasm" github.com/cellb/cellb/core/cell \
		-run 'TestCellSemantics|TestCellSuiteRejectsTwins' .
	cat "$work/c1.out" "$work/c2.out" >"$work/cell.cover"
	"$tool" -mutants "$work/cell.json" -pkg "$root/core/cell" -files gate.go,commit.go,tracker.go,alarm.go,alarmstate.go \
		-cover "$work/cell.cover" -equivalent "$root/scripts/mutation/equivalent.txt" \
		-test "$root/core|-count=1 -failfast -timeout 60s ./cell" \
		-test "$root/drivers/wasm|-count=1 -failfast -timeout 90s -run TestCellSemantics ." \
		-test "$root/drivers/wasm|-count=1 -failfast -timeout 300s -run TestCellSuiteRejectsTwins ." \
		-timeout 6m "$@"
}

run_fs() {
	echo "== adapters/fs: lock.go"
	mutants "$root/adapters/fs" . "$work/fs.json"
	cover "$work/fs.cover" "$root/adapters/fs" github.com/cellb/cellb/adapters/fs .
	"$tool" -mutants "$work/fs.json" -pkg "$root/adapters/fs" -files lock.go \
		-cover "$work/fs.cover" -equivalent "$root/scripts/mutation/equivalent.txt" \
		-test "$root/adapters/fs|-count=1 -failfast -timeout 60s ." \
		"$@"
}

run_fleet() {
	echo "== core/fleet: acquire.go"
	mutants "$root/core" ./fleet "$work/fleet.json"
	# The seeded simulation runs 300 seeds per mutant, not CI's 10,000: the
	# unit tests and the lease suite kill most mutants first.
	cover "$work/f1.out" "$root/core" github.com/cellb/cellb/core/fleet ./fleet -sim.seeds=300
	cover "$work/f2.out" "$root/conformance" github.com/cellb/cellb/core/fleet ./leasetest
	cat "$work/f1.out" "$work/f2.out" >"$work/fleet.cover"
	"$tool" -mutants "$work/fleet.json" -pkg "$root/core/fleet" -files acquire.go \
		-cover "$work/fleet.cover" -equivalent "$root/scripts/mutation/equivalent.txt" \
		-test "$root/core|-count=1 -failfast -timeout 60s ./fleet -sim.seeds=300" \
		-test "$root/conformance|-count=1 -failfast -timeout 60s ./leasetest" \
		"$@"
}

run_ltx() {
	echo "== core/ltx: plan.go"
	mutants "$root/core" ./ltx "$work/ltx.json"
	cover "$work/l1.out" "$root/core" github.com/cellb/cellb/core/ltx ./ltx ./ltxlog
	"$tool" -mutants "$work/ltx.json" -pkg "$root/core/ltx" -files plan.go \
		-cover "$work/l1.out" -equivalent "$root/scripts/mutation/equivalent.txt" \
		-test "$root/core|-count=1 -failfast -timeout 60s ./ltx ./ltxlog" \
		"$@"
}

run_httperr() {
	echo "== core/httperr: httperr.go diskfull.go retryafter.go"
	mutants "$root/core" ./httperr "$work/httperr.json"
	# core/cell's tests include a stub answering with the mapping.
	cover "$work/h1.out" "$root/core" github.com/cellb/cellb/core/httperr ./httperr ./cell
	"$tool" -mutants "$work/httperr.json" -pkg "$root/core/httperr" -files httperr.go,diskfull.go,retryafter.go \
		-cover "$work/h1.out" -equivalent "$root/scripts/mutation/equivalent.txt" \
		-test "$root/core|-count=1 -failfast -timeout 60s ./httperr ./cell" \
		"$@"
}

case $target in
cell) run_cell "$@" ;;
fs) run_fs "$@" ;;
fleet) run_fleet "$@" ;;
ltx) run_ltx "$@" ;;
httperr) run_httperr "$@" ;;
all)
	run_cell "$@"
	run_fs "$@"
	run_fleet "$@"
	run_ltx "$@"
	run_httperr "$@"
	;;
*)
	echo "usage: $0 [cell|fs|fleet|ltx|httperr|all] [-only \"<file>:<line>:<col> <TYPE>\"]" >&2
	exit 2
	;;
esac
