#!/usr/bin/env bash
# Draws docs/benchmarks-writes.svg: acknowledged writes per second against
# callers (1, 4, 16, 64) for each mode (local, local-primary, fleet) and
# the raw SQLite baseline, from BenchmarkAckedWrites' output
# (tests/bench_runtime_test.go; docs/benchmarks.md, "Performance at
# scale"). The chart is drawn by scripts/benchchart (standard library only).
#
#   scripts/bench-chart.sh                 # runs the benchmark (about 2 minutes), then draws
#   scripts/bench-chart.sh bench.txt       # draws from a saved run's output
#   NOTE="2 vCPU, load 1.2, 2026-12-03" scripts/bench-chart.sh bench.txt
#
# With no file, the benchmark's output is kept in docs/benchmarks-writes.txt
# beside the chart (the committed one holds the whole issue-13 run of
# docs/benchmarks.md; lines of other benchmarks are ignored). BENCHTIME (2s)
# and COUNT (1) set the run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/docs/benchmarks-writes.svg"
if [ $# -ge 1 ]; then
	input=$1
else
	input="$root/docs/benchmarks-writes.txt"
	(cd "$root" && go test -run '^$' -bench 'AckedWrites' -benchtime "${BENCHTIME:-2s}" -count "${COUNT:-1}" ./tests) | tee "$input"
fi
note=${NOTE:-"$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) when drawn, $(date -u +%F)"}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
(cd "$root/scripts/benchchart" && GOWORK=off go run main.go -note "$note") < "$input" > "$tmp"
mv "$tmp" "$out"
echo "wrote $out"
