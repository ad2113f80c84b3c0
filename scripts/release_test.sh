#!/usr/bin/env bash
# Tests of scripts/release.sh, run by .ci/run: on a clone of the committed
# tree, each way go.work and the go.mod files can disagree makes `check`
# fail, and `plan`, `tag` and `bump` do what docs/releasing.md says. Only
# the clone is changed; nothing is pushed anywhere.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
clone() {
	rm -rf "$work/r"
	git clone -q --no-tags "$root" "$work/r"
	# The scripts under test are the working tree's.
	cp "$root/scripts/release.sh" "$work/r/scripts/release.sh"
	git -C "$work/r" -c user.name=t -c user.email=t@t commit -qam "script under test" --allow-empty
}
rel() { (cd "$work/r" && bash scripts/release.sh "$@"); }
expect_fail() { # name, wanted text, command...
	local name=$1 want=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		echo "FAIL $name: succeeded, want failure saying '$want'"; fails=$((fails + 1))
	elif ! grep -qF -- "$want" <<<"$out"; then
		echo "FAIL $name: failed without saying '$want':"; echo "$out"; fails=$((fails + 1))
	else
		echo "ok   $name"
	fi
}
expect_ok() { # name, wanted text, command...
	local name=$1 want=$2 out
	shift 2
	if ! out=$("$@" 2>&1); then
		echo "FAIL $name: failed:"; echo "$out"; fails=$((fails + 1))
	elif ! grep -qF -- "$want" <<<"$out"; then
		echo "FAIL $name: did not say '$want':"; echo "$out"; fails=$((fails + 1))
	else
		echo "ok   $name"
	fi
}
mod() { (cd "$work/r" && go mod edit "$@"); }

clone
expect_ok "check passes on the tree" "siblings required at" rel check --quick

mod -replace=github.com/cellb/cellb/core=../../core adapters/fs/go.mod
expect_fail "a replace directive in a go.mod" "adapters/fs/go.mod: has a replace directive" rel check --quick
clone
mod -require=github.com/cellb/cellb/core@v0.0.0 conformance/go.mod
expect_fail "a sibling required at another version" "conformance/go.mod: requires github.com/cellb/cellb/core v0.0.0, want" rel check --quick
clone
mkdir -p "$work/r/tools/extra" && printf "module github.com/cellb/cellb/tools/extra\n\ngo 1.26\n" >"$work/r/tools/extra/go.mod"
expect_fail "a module missing from go.work" "tools/extra/go.mod: not in go.work" rel check --quick
clone
(cd "$work/r" && go work edit -dropreplace=github.com/cellb/cellb/core@$(cat scripts/release-version))
expect_fail "go.work without a module's replacement" "missing: github.com/cellb/cellb/core" rel check --quick
clone
mod -module=github.com/cellb/cellb/adapters/filesystem adapters/fs/go.mod
expect_fail "a module path that is not its directory" "adapters/fs/go.mod: module github.com/cellb/cellb/adapters/filesystem" rel check --quick
clone
mod -droprequire=github.com/ncruces/go-sqlite3 drivers/wasm/go.mod
expect_fail "a go.mod that is not tidy as published" "drivers/wasm/go.mod is not tidy as published" rel check

clone
expect_ok "plan starts with core" "core/v0.1.0  ready" sh -c "cd '$work/r' && bash scripts/release.sh plan | head -1"
expect_ok "plan's last round has cmd/cellb" "cmd/cellb/v0.1.0" sh -c "cd '$work/r' && bash scripts/release.sh plan | tail -2"
expect_ok "plan's last round has tests" "tests/v0.1.0" sh -c "cd '$work/r' && bash scripts/release.sh plan | tail -2"
expect_ok "tag is a dry run" "core/v0.1.0: would tag" rel tag
if [ -n "$(git -C "$work/r" tag -l)" ]; then echo "FAIL the dry run created tags"; fails=$((fails + 1)); fi
expect_ok "tag stops at a module without its siblings' checksums" "conformance/v0.1.0: not yet" rel tag --apply
expect_ok "tag --apply tags core" "core/v0.1.0" git -C "$work/r" tag -l
if [ -n "$(git -C "$root" tag -l 'core/v*')" ]; then echo "FAIL a tag reached the repository"; fails=$((fails + 1)); fi
# Once core is published, `sums` records its checksums in conformance's
# go.sum; stand-in lines show that tag then goes on to conformance.
printf 'github.com/cellb/cellb/core v0.1.0 h1:x=\ngithub.com/cellb/cellb/core v0.1.0/go.mod h1:x=\n' >>"$work/r/conformance/go.sum"
expect_fail "tag refuses a worktree with changes" "commit them first" rel tag --apply
git -C "$work/r" -c user.name=t -c user.email=t@t commit -qam "conformance: core's checksums"
expect_ok "tag goes on once the checksums are there" "conformance/v0.1.0: tagged" rel tag --apply

clone
expect_fail "bump refuses a bad version" "want a version like v0.2.0" rel bump 0.2
expect_ok "bump" "now at v0.2.0" rel bump v0.2.0
expect_ok "check passes after bump" "siblings required at v0.2.0" rel check --quick
expect_ok "bump moves go.work's replacements" "github.com/cellb/cellb/core v0.2.0 => ./core" sh -c "cd '$work/r' && go work edit -print"

if [ "$fails" -gt 0 ]; then
	echo "release_test.sh: $fails failed"
	exit 1
fi
echo "release_test.sh: all passed"
