#!/usr/bin/env bash
# versitygw: a real S3-compatible server (posix backend) for the S3 adapter's
# tests. Protocol: see .ci/run.
#   bash .ci/servers/versitygw.sh start <statedir>
#   bash .ci/servers/versitygw.sh stop <statedir>
set -euo pipefail

name=versitygw
module=github.com/versity/versitygw
version=v1.8.0
bucket=cellb-test
access_key=cellbtest
secret_key=cellbtestsecret
region=us-east-1
# SHA-256 of an empty body; S3 servers want it in a signed request.
empty_sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855

# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
bin_dir=${GOBIN:-$root/.ci/tools/bin}
bin=$bin_dir/versitygw

install() {
	if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+$module[[:space:]]+$version([[:space:]]|$)"; then
		return
	fi
	echo "$name: installing $module/cmd/versitygw@$version into $bin_dir"
	mkdir -p "$bin_dir"
	(cd "$state" && GOWORK=off GOBIN="$bin_dir" go install "$module/cmd/versitygw@$version")
}

start() {
	refuse_if_running
	install
	local data=$state/$name-data port endpoint
	mkdir -p "$data"
	port=$(first_free_port 17070)
	endpoint=http://127.0.0.1:$port
	# launch makes the server the leader of its own process group.
	ROOT_ACCESS_KEY_ID=$access_key ROOT_SECRET_ACCESS_KEY=$secret_key \
		launch "$bin" --port "127.0.0.1:$port" posix "$data"
	local code=000
	for _ in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || fail "exited during startup"
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$endpoint/" || true)
		[ "$code" != 000 ] && break
		sleep 0.2
	done
	[ "$code" != 000 ] || fail "no answer on $endpoint after 30 s"
	# Create the test bucket (409 = it already exists from an earlier run).
	code=$(curl -s -o "$state/$name-mkbucket.out" -w '%{http_code}' --max-time 10 \
		--aws-sigv4 "aws:amz:$region:s3" --user "$access_key:$secret_key" \
		-H "x-amz-content-sha256: $empty_sha256" \
		-X PUT "$endpoint/$bucket") || true
	case $code in
	200 | 409) ;;
	*) fail "creating bucket $bucket answered HTTP $code: $(cat "$state/$name-mkbucket.out" 2>/dev/null)" ;;
	esac
	cat >>"$state/env" <<ENV
export CELLB_TEST_S3_ENDPOINT=$endpoint
export CELLB_TEST_S3_BUCKET=$bucket
export CELLB_TEST_S3_REGION=$region
export CELLB_TEST_S3_ACCESS_KEY=$access_key
export CELLB_TEST_S3_SECRET_KEY=$secret_key
ENV
	echo "$name: $module@$version listening on $endpoint (bucket $bucket)"
}

dispatch
