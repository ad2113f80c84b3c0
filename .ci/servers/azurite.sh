#!/usr/bin/env bash
# Azurite: the Azure Blob Storage emulator (npm) for the Azure adapter's
# tests. Protocol: see .ci/run.
#   bash .ci/servers/azurite.sh start <statedir>
#   bash .ci/servers/azurite.sh stop <statedir>
# --disableTelemetry keeps it from calling home; --skipApiVersionCheck lets
# the Go SDK's newer x-ms-version through.
set -euo pipefail

name=azurite
version=3.35.0
container=cellb-test
account=devstoreaccount1
# Azurite's built-in development account key (public, documented).
account_key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
prefix=$root/.ci/tools/azurite
bin=$prefix/node_modules/.bin/azurite-blob

installed_version() {
	node -e 'process.stdout.write(require(process.argv[1]).version)' \
		"$prefix/node_modules/azurite/package.json" 2>/dev/null || true
}

install() {
	if [ -x "$bin" ] && [ "$(installed_version)" = "$version" ]; then
		return
	fi
	echo "$name: installing azurite@$version into $prefix"
	mkdir -p "$prefix"
	npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error "azurite@$version" >"$state/$name-install.log" 2>&1 ||
		{ tail -n 30 "$state/$name-install.log" >&2; echo "$name: npm install failed" >&2; exit 1; }
	[ "$(installed_version)" = "$version" ] || { echo "$name: npm installed $(installed_version), wanted $version" >&2; exit 1; }
}

# create_container signs a Create Container request with the account key
# (Shared Key) using Node's standard library; 201 = created, 409 = exists.
create_container() {
	local port=$1
	node - "$port" "$account" "$account_key" "$container" <<'JS'
const http = require('http'), crypto = require('crypto');
const [port, account, key, container] = process.argv.slice(2);
const date = new Date().toUTCString(), version = '2021-12-02';
const path = `/${account}/${container}`;
const toSign = ['PUT', '', '', '', '', '', '', '', '', '', '', '',
  `x-ms-date:${date}`, `x-ms-version:${version}`,
  `/${account}${path}\nrestype:container`].join('\n');
const sig = crypto.createHmac('sha256', Buffer.from(key, 'base64')).update(toSign, 'utf8').digest('base64');
const req = http.request({host: '127.0.0.1', port, method: 'PUT', path: `${path}?restype=container`,
  headers: {'x-ms-date': date, 'x-ms-version': version, 'Content-Length': 0,
    Authorization: `SharedKey ${account}:${sig}`}}, res => {
  let body = '';
  res.on('data', d => body += d);
  res.on('end', () => {
    if (res.statusCode === 201 || res.statusCode === 409) process.exit(0);
    console.error(`HTTP ${res.statusCode}: ${body}`);
    process.exit(1);
  });
});
req.on('error', e => { console.error(e.message); process.exit(1); });
req.setTimeout(10000, () => req.destroy(new Error('timed out')));
req.end();
JS
}

start() {
	refuse_if_running
	install
	local data=$state/$name-data port endpoint
	mkdir -p "$data"
	port=$(first_free_port 10000)
	endpoint=http://127.0.0.1:$port/$account
	# launch makes the server the leader of its own process group.
	launch "$bin" --blobHost 127.0.0.1 --blobPort "$port" --location "$data" \
		--disableTelemetry --skipApiVersionCheck --silent
	local code=000
	for _ in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || fail "exited during startup"
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$endpoint?comp=list" || true)
		[ "$code" != 000 ] && break
		sleep 0.2
	done
	[ "$code" != 000 ] || fail "no answer on $endpoint after 30 s"
	create_container "$port" 2>"$state/$name-mkcontainer.out" ||
		fail "creating container $container failed: $(cat "$state/$name-mkcontainer.out")"
	cat >>"$state/env" <<ENV
export CELLB_TEST_AZURE_ENDPOINT=$endpoint
export CELLB_TEST_AZURE_ACCOUNT=$account
export CELLB_TEST_AZURE_KEY=$account_key
export CELLB_TEST_AZURE_CONTAINER=$container
export CELLB_TEST_AZURE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=$account;AccountKey=$account_key;BlobEndpoint=$endpoint;'
ENV
	echo "$name: azurite@$version listening on $endpoint (container $container)"
}

dispatch
