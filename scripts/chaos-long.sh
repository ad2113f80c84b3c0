#!/usr/bin/env bash
# Runs the history checker (cmd/cellb's TestFleetHistoryIsLinearizable on a
# faulty local-files bucket and TestFleetHistoryIsLinearizableS3 on the S3
# server behind scripts/faultproxy; docs/testing.md) for as long and with
# as many seeds as asked, then prints every run's "history-check:" line,
# the operations checked in all, and each violation.
#
#   scripts/chaos-long.sh                                   # 10 min per run, seeds 1 2 3
#   CELLB_CHAOS_DURATION=30m CELLB_CHAOS_SEEDS="7" scripts/chaos-long.sh
#   CELLB_CHAOS_SERVE_ARGS="--node-log=false" scripts/chaos-long.sh   # flags for every node
#   CELLB_CHAOS_BUCKETS=s3 scripts/chaos-long.sh            # files, s3 or "files s3"
#
# The S3 runs need a server: bash .ci/servers/versitygw.sh start /tmp/s3 &&
# source /tmp/s3/env (by default they run when CELLB_TEST_S3_ENDPOINT is
# set). CELLB_CHAOS_FILE_FAULTS and CELLB_CHAOS_PROXY_ARGS replace the
# injected faults (see the tests' doc comments). Each run's nodes' logs,
# and for a violation history.json, porcupine's history.html and the chaos
# timeline, stay under CELLB_CHAOS_LOGS (default: a new directory in /tmp).
# Exit status 1 if any run failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CELLB_CHAOS_DURATION=${CELLB_CHAOS_DURATION:-10m}
seeds=${CELLB_CHAOS_SEEDS:-1 2 3}
default_buckets=files
[ -z "${CELLB_TEST_S3_ENDPOINT:-}" ] || default_buckets="files s3"
buckets=${CELLB_CHAOS_BUCKETS:-$default_buckets}
export CELLB_CHAOS_LOGS=${CELLB_CHAOS_LOGS:-$(mktemp -d /tmp/cellb-chaos-long-XXXXXX)}
mkdir -p "$CELLB_CHAOS_LOGS"

bin=$CELLB_CHAOS_LOGS/cellb.test
echo "== building the test binary of cmd/cellb"
(cd "$root" && go test -c -o "$bin" ./cmd/cellb/app)

failed=0
for seed in $seeds; do
	for bucket in $buckets; do
		case $bucket in
		files) test=TestFleetHistoryIsLinearizable ;;
		s3) test=TestFleetHistoryIsLinearizableS3 ;;
		*) echo "unknown bucket kind $bucket (want files or s3)"; exit 2 ;;
		esac
		out=$CELLB_CHAOS_LOGS/$bucket-seed$seed.out
		echo "== $bucket, seed $seed, $CELLB_CHAOS_DURATION of chaos, serve args '${CELLB_CHAOS_SERVE_ARGS:-}' ($out)"
		# The test finds bucket.go and scripts/ from the package directory.
		if (cd "$root/cmd/cellb/app" && CELLB_CHAOS_SEED=$seed "$bin" -test.run "^$test\$" -test.v -test.timeout 0 -test.count 1) >"$out" 2>&1; then
			grep -o 'history-check:.*' "$out" || { echo "   no history-check line (skipped?):"; grep -E -- '--- (SKIP|PASS)|SKIP' "$out" | head -3; }
		else
			failed=1
			grep -o 'history-check:.*' "$out" || true
			echo "   FAILED:"
			grep -E 'not linearizable|visualization:|history.json|REPORT|did not|cannot|panic|--- FAIL' "$out" | sed 's/^/   /' | head -20
		fi
	done
done
echo "== totals"
cat "$CELLB_CHAOS_LOGS"/*.out | grep -o 'history-check:.*' | awk '
	{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } runs++; ops += v["ops"]; acked += v["acked-incs"]; unknown += v["unknown-incs"]; reads += v["reads"]; if (v["result"] != "linearizable") bad++ }
	END { printf "%d runs, operations checked: %d (acknowledged increments %d, unknown increments %d, reads %d); runs not linearizable: %d\n", runs, ops, acked, unknown, reads, bad + 0 }'
echo "logs: $CELLB_CHAOS_LOGS"
exit $failed
