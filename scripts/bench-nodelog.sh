#!/usr/bin/env bash
# Runs the node log's goal table (issue 21, docs/benchmarks.md "The node
# log") in one run: `cellb serve --bucket s3://…` processes on versitygw
# behind scripts/faultproxy adding CELLB_BENCH_LATENCY (10ms) per request,
# the per-cell mode beside the node log; then the embedded rows (one caller
# on the local-files bucket against a durable new file: local-primary as
# tests build it, and the embedded default built through host.New with its
# node log and with per-cell uploads) and 64 callers on
# one cell, in-process. Samples the load average every 10 s into the same
# output. About 15 minutes on 2 cores.
#
#   scripts/bench-nodelog.sh            # output kept in docs/benchmarks-nodelog.txt
#
# It starts its own versitygw in a temporary directory and stops it on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/docs/benchmarks-nodelog.txt"
state=$(mktemp -d)
bash "$root/.ci/servers/versitygw.sh" start "$state" >&2
# shellcheck disable=SC1091
source "$state/env"
(
	while true; do
		echo "# load $(date -u +%H:%M:%S) $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out"
		sleep 10
	done
) &
sampler=$!
cleanup() {
	kill $sampler 2>/dev/null || true
	bash "$root/.ci/servers/versitygw.sh" stop "$state" >&2 || true
	rm -rf "$state"
}
trap cleanup EXIT
: > "$out"
{
	echo "# bench-nodelog $(date -u +%FT%TZ) commit $(git -C "$root" rev-parse --short HEAD) $(nproc) CPUs"
	cd "$root"
	echo "# processes on S3 behind the latency proxy" >&2
	go test -run '^$' -bench '^BenchmarkNodeLog(BusyCells|OneClient|Takeover)$' -benchtime 1x -timeout 40m ./cmd/cellb/app
	echo "# in-process: embedded default and 64 callers" >&2
	go test -run '^$' -bench 'AckFloor/durable-new-file|AckedWrites/(local-primary|fleet|fleet-nodelog|embedded-nodelog|embedded-percell)/callers=(1|64)$' \
		-benchtime 2s -count "${COUNT:-3}" ./tests
} 2>&1 | grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok \)' | tee -a "$out"
