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

# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
bin_dir=${GOBIN:-$root/.ci/tools/bin}
bin=$bin_dir/fake-gcs-server

install() {
	if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+$module[[:space:]]+$version([[:space:]]|$)"; then
		return
	fi
	echo "$name: installing $module@$version into $bin_dir"
	mkdir -p "$bin_dir"
	(cd "$state" && GOWORK=off GOBIN="$bin_dir" go install "$module@$version")
}

start() {
	refuse_if_running
	install
	local port endpoint
	port=$(first_free_port 14443)
	endpoint=http://127.0.0.1:$port
	# The memory backend: the filesystem one keeps objects as nested files,
	# so it cannot hold "x" and "x/y" at once (GCS can) and answers such a
	# write with a 500.
	launch "$bin" -host 127.0.0.1 -port "$port" -scheme http -backend memory \
		-external-url "$endpoint" -public-host "127.0.0.1:$port" \
		-log-level warn
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

dispatch
