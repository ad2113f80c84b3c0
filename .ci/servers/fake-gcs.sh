#!/usr/bin/env bash
# fake-gcs-server: a Google Cloud Storage emulator (JSON and XML APIs) for
# the GCS adapter's tests. Protocol: see .ci/run.
#   bash .ci/servers/fake-gcs.sh start <statedir>
#   bash .ci/servers/fake-gcs.sh stop <statedir>
set -euo pipefail

name=fake-gcs
module=github.com/fsouza/fake-gcs-server
version=v1.56.1
bucket=cellb-test

root=$(cd "$(dirname "$0")/../.." && pwd)
action=${1:-}
state=${2:-}
if [ -z "$action" ] || [ -z "$state" ]; then
	echo "usage: $0 start|stop <statedir>" >&2
	exit 2
fi
bin_dir=${GOBIN:-$root/.ci/tools/bin}
bin=$bin_dir/fake-gcs-server
pidfile=$state/$name.pid
log=$state/$name.log

# first_free_port prints the first port from $1 up on which nothing on
# 127.0.0.1 accepts connections.
first_free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}

fail() {
	echo "$name: $*" >&2
	if [ -f "$log" ]; then
		echo "--- last lines of $log ---" >&2
		tail -n 30 "$log" >&2 || true
	fi
	stop || true
	exit 1
}

install() {
	if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+$module[[:space:]]+$version([[:space:]]|$)"; then
		return
	fi
	echo "$name: installing $module@$version into $bin_dir"
	mkdir -p "$bin_dir"
	(cd "$state" && GOWORK=off GOBIN="$bin_dir" go install "$module@$version")
}

stop() {
	[ -f "$pidfile" ] || return 0
	local pgid
	pgid=$(cat "$pidfile")
	rm -f "$pidfile"
	kill -TERM -- "-$pgid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 -- "-$pgid" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "$name: still running 5 s after SIGTERM; sending SIGKILL" >&2
	kill -KILL -- "-$pgid" 2>/dev/null || true
}

start() {
	mkdir -p "$state"
	if [ -f "$pidfile" ] && kill -0 -- "-$(cat "$pidfile")" 2>/dev/null; then
		echo "$name: already running for $state (process group $(cat "$pidfile"))" >&2
		exit 1
	fi
	install
	rm -f "$pidfile"
	local port endpoint
	port=$(first_free_port 14443)
	endpoint=http://127.0.0.1:$port
	# setsid makes the server the leader of its own process group, so stop
	# can signal it together with anything it spawns. The memory backend:
	# the filesystem one keeps objects as nested files, so it cannot hold
	# "x" and "x/y" at once (GCS can) and answers such a write with a 500.
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$bin" -host 127.0.0.1 -port "$port" -scheme http -backend memory \
		-external-url "$endpoint" -public-host "127.0.0.1:$port" \
		-log-level warn >"$log" 2>&1 </dev/null &
	# The server writes its own pid (it leads its process group) before it
	# starts, whether or not setsid had to fork.
	local pid=
	for _ in $(seq 50); do
		[ -s "$pidfile" ] && pid=$(cat "$pidfile") && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "did not start"
	local code=000
	for _ in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || fail "exited during startup"
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$endpoint/storage/v1/b" || true)
		[ "$code" = 200 ] && break
		sleep 0.2
	done
	[ "$code" = 200 ] || fail "no answer on $endpoint after 30 s (last HTTP status $code)"
	# Create the test bucket (409 = it already exists from an earlier run).
	code=$(curl -s -o "$state/$name-mkbucket.out" -w '%{http_code}' --max-time 10 \
		-H 'Content-Type: application/json' -d "{\"name\":\"$bucket\"}" \
		"$endpoint/storage/v1/b?project=cellb-test") || true
	case $code in
	200 | 409) ;;
	*) fail "creating bucket $bucket answered HTTP $code: $(cat "$state/$name-mkbucket.out" 2>/dev/null)" ;;
	esac
	cat >>"$state/env" <<ENV
export CELLB_TEST_GCS_ENDPOINT=$endpoint
export CELLB_TEST_GCS_BUCKET=$bucket
ENV
	echo "$name: $module@$version listening on $endpoint (bucket $bucket)"
}

case $action in
start) start ;;
stop) stop ;;
*)
	echo "usage: $0 start|stop <statedir>" >&2
	exit 2
	;;
esac
