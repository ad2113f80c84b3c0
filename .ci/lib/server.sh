# Shared by the .ci/servers scripts (sourced, never run). A script sets
# $name, sources this file with its arguments, defines install and start,
# and ends with `dispatch`. Protocol: see .ci/run.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
action=${1:-}
state=${2:-}
if [ -z "$action" ] || [ -z "$state" ]; then
	echo "usage: $0 start|stop <statedir>" >&2
	exit 2
fi
pidfile=$state/$name.pid
log=$state/$name.log

# first_free_port prints the first port from $1 up on which nothing on
# 127.0.0.1 accepts connections.
first_free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}

# fail reports why start failed, with the server's log tail, and stops it.
fail() {
	echo "$name: $*" >&2
	if [ -f "$log" ]; then
		echo "--- last lines of $log ---" >&2
		tail -n 30 "$log" >&2 || true
	fi
	stop || true
	exit 1
}

# stop signals the server's process group, escalating to SIGKILL after 5 s.
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

# refuse_if_running exits when a server started for this state still runs.
refuse_if_running() {
	mkdir -p "$state"
	if [ -f "$pidfile" ] && kill -0 -- "-$(cat "$pidfile")" 2>/dev/null; then
		echo "$name: already running for $state (process group $(cat "$pidfile"))" >&2
		exit 1
	fi
	rm -f "$pidfile"
}

# launch runs "$@" in the background as the leader of its own process group
# (so stop can signal it with anything it spawns), its output in $log, and
# sets $pid once the server has written it — whether or not setsid forked.
launch() {
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" >"$log" 2>&1 </dev/null &
	pid=
	for _ in $(seq 50); do
		[ -s "$pidfile" ] && pid=$(cat "$pidfile") && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "did not start"
}

dispatch() {
	case $action in
	start) start ;;
	stop) stop ;;
	*)
		echo "usage: $0 start|stop <statedir>" >&2
		exit 2
		;;
	esac
}
