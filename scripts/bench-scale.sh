#!/usr/bin/env bash
# Runs every row of issue 13's goal table ("Performance at scale",
# docs/benchmarks.md) in one run, each beside its baseline, samples the
# load average every 10 s into the same output, and prints the goal table
# (scripts/benchscale). About 10 minutes on 2 cores.
#
#   scripts/bench-scale.sh                  # runs, keeps the output in docs/benchmarks-scale.txt
#   scripts/bench-scale.sh saved.txt        # prints the table of a saved run
#
# The restore rows need litestream v0.5.16 on PATH or in $CELLB_LITESTREAM
# (build it into a temporary directory with `go install`; never commit it).
# COUNT (3) repeats the throughput benchmarks; the table shows medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
summarize() { (cd "$root/scripts/benchscale" && GOWORK=off go run main.go) < "$1"; }
if [ $# -ge 1 ]; then
	summarize "$1"
	exit 0
fi
out="$root/docs/benchmarks-scale.txt"
count=${COUNT:-3}
: > "$out"
(
	while true; do
		echo "# load $(date -u +%H:%M:%S) $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out"
		sleep 10
	done
) &
sampler=$!
trap 'kill $sampler 2>/dev/null || true' EXIT
{
	echo "# bench-scale $(date -u +%FT%TZ) commit $(git -C "$root" rev-parse --short HEAD) $(nproc) CPUs"
	cd "$root"
	echo "# acknowledged writes" >&2
	go test -run '^$' -bench 'AckedWrites/(raw-sqlite-full|local-primary|fleet)/callers=(1|64)$|AckFloor' \
		-benchtime 2s -count "$count" ./tests
	echo "# activations" >&2
	go test -run '^$' -bench '^BenchmarkActivationsByKind$' -benchtime 2000x -count "${ACT_COUNT:-2}" ./tests
	echo "# idle cells" >&2
	CELLB_IDLE_CELLS=1000 go test -run '^$' -bench '^BenchmarkIdleCellsByKind$' -benchtime 1x ./tests
	echo "# memory and restore" >&2
	go test -run '^$' -bench '^Benchmark(LargeCell|RestoreVsLitestream)$' -benchtime 1x ./tests
} 2>&1 | grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok \)' | tee -a "$out"
kill $sampler 2>/dev/null || true
summarize "$out"
