#!/usr/bin/env bash
# How long the README's first command takes on a machine that has never
# built CellB: a fresh clone of this checkout, an empty module cache and an
# empty build cache, then `go run ./cmd/cellb serve` until the counter
# answers. Prints the phases (module download, compile and start) and the
# load average around them; docs/benchmarks.md "The first build" has the
# figures. Needs the Go module proxy; binds 127.0.0.1 only; removes
# everything it made.
#
#   scripts/bench-first-run.sh            # the default build
#   TAGS=cellb_cgo,cellb_modernc scripts/bench-first-run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server=
cleanup() {
	if [ -n "$server" ]; then
		kill -- -"$server" 2>/dev/null || kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

git clone -q "$root" "$work/cellb"
export GOMODCACHE="$work/mod" GOCACHE="$work/cache" GOFLAGS=-modcacherw
tags=()
if [ -n "${TAGS:-}" ]; then tags=(-tags "$TAGS"); fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cd "$work/cellb"

now() { date +%s.%N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load before: $(load)"
t0=$(now)
# The modules the build needs (what go run downloads first).
go list "${tags[@]}" -deps ./cmd/cellb >/dev/null
t1=$(now)
echo "downloaded: $(du -sm "$GOMODCACHE" | cut -f1) MB in $(echo "$t1 - $t0" | bc) s (load $(load))"
setsid go run "${tags[@]}" ./cmd/cellb serve --listen "127.0.0.1:$port" --data-dir "$work/data" >"$work/serve.log" 2>&1 &
server=$!
until curl -fsS -X POST "http://127.0.0.1:$port/counter/apples" >/dev/null 2>&1; do
	if ! kill -0 "$server" 2>/dev/null; then
		cat "$work/serve.log" >&2
		echo "cellb serve exited before answering" >&2
		exit 1
	fi
	sleep 0.2
done
t2=$(now)
echo "compiled and answered in $(echo "$t2 - $t1" | bc) s (load $(load))"
echo "first answer after $(echo "$t2 - $t0" | bc) s in all"
