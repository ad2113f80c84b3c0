#!/usr/bin/env bash
# Module versions and releases (docs/releasing.md).
#
# Every module of the repository is released at one version, the one in
# scripts/release-version, and each requires its siblings at that version.
# go.work serves development: it uses every module and replaces each, at
# that version, by its directory, so no go.mod has a replace directive.
#
#   scripts/release.sh check [--fix|--quick]  go.work and go.mod agree (CI)
#   scripts/release.sh plan             modules in dependency order, with tags
#   scripts/release.sh bump vX.Y.Z      set the version everywhere
#   scripts/release.sh sums             record published siblings' checksums
#   scripts/release.sh tag [--apply]    tag the modules that are ready, in order
#
# check: every module on disk (a go.mod outside scripts/ and testdata/) is
# in go.work and every go.work entry has a go.mod; each module's path is
# github.com/cellb/cellb/<dir>; no go.mod has a replace directive; every
# sibling require names a module of go.work at the release version; go.work
# replaces each of its modules, at the release version and no other, by its
# directory (a used module is a root of the build, but a required version
# of it is still looked up: without these, development would try to fetch
# unpublished versions); and
# each go.mod and go.sum is what `go mod tidy` makes of it with GOWORK=off
# once its siblings are published as they are here (checked by tidying a
# copy in which each sibling is replaced by its directory). --fix writes
# the tidied files back; --quick skips the tidying.
#
# tag is a dry run unless --apply: it prints the tags it would create. It
# only ever creates local annotated tags at HEAD (a clean worktree), never
# pushes. A module is ready when its go.sum holds the checksums of the
# siblings it requires at the release version; these exist only once the
# siblings are published, so a release goes in rounds (core first; then
# conformance; then the adapters and drivers; then examples; then
# cmd/cellb): tag, push, `sums`, commit, tag again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
prefix=github.com/cellb/cellb
version=$(cat scripts/release-version)

die() { echo "release.sh: $*" >&2; exit 1; }

# workspace_modules: the directories go.work uses, one a line, sorted.
workspace_modules() {
	go work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)"[,]*$/\1/p' | sed 's#^\./##' | sort
}

# disk_modules: the directories holding a go.mod git knows of (tracked or
# not ignored), apart from scripts/ tools and testdata.
disk_modules() {
	git ls-files -co --exclude-standard -- 'go.mod' '*/go.mod' |
		grep -v -e '^scripts/' -e '/testdata/' | xargs -r -n1 dirname | sort -u
}

# requires <dir>: "path version" of each require of the module's go.mod.
requires() {
	go mod edit -print "$1/go.mod" | awk '
		$1 == "require" && $2 == "(" { blk = 1; next }
		blk && $1 == ")" { blk = 0; next }
		blk && $1 != "//" { print $1, $2; next }
		$1 == "require" { print $2, $3 }'
}

# siblings <dir>: the directories of the siblings the module requires.
siblings() {
	requires "$1" | awk -v p="$prefix/" 'index($1, p) == 1 { print substr($1, length(p) + 1) }'
}

# order: the workspace's modules in dependency order, in rounds: each
# round is every module whose siblings are all in earlier rounds, by name.
order() {
	local done=" " left round m d ok
	left=$(workspace_modules)
	while [ -n "$left" ]; do
		round=
		for m in $left; do
			ok=1
			for d in $(siblings "$m"); do
				case "$done" in *" $d "*) ;; *) ok= ;; esac
			done
			[ -z "$ok" ] || round="$round$m "
		done
		[ -n "$round" ] || die "the modules' requires form a cycle among: $left"
		for m in $round; do echo "$m"; done
		done="$done$round"
		left=$(for m in $left; do case "$done" in *" $m "*) ;; *) echo "$m" ;; esac; done)
	done
}

check_versions() {
	local fail= ws dm m d path ver
	ws=$(workspace_modules)
	dm=$(disk_modules)
	for m in $dm; do
		grep -qx "$m" <<<"$ws" || { echo "$m/go.mod: not in go.work (add it: go work use ./$m)"; fail=1; }
	done
	for m in $ws; do
		[ -f "$m/go.mod" ] || { echo "go.work uses ./$m, which has no go.mod"; fail=1; continue; }
		path=$(go mod edit -print "$m/go.mod" | awk '$1 == "module" { print $2 }')
		[ "$path" = "$prefix/$m" ] || { echo "$m/go.mod: module $path, want $prefix/$m"; fail=1; }
		if go mod edit -print "$m/go.mod" | grep -q '^replace'; then
			echo "$m/go.mod: has a replace directive; go.work takes the siblings' place in development"
			fail=1
		fi
		while read -r path ver; do
			[ -n "$path" ] || continue
			d=${path#"$prefix/"}
			grep -qx "$d" <<<"$ws" || { echo "$m/go.mod: requires $path, which is not a module of go.work"; fail=1; }
			[ "$ver" = "$version" ] || { echo "$m/go.mod: requires $path $ver, want $version (scripts/release-version)"; fail=1; }
		done < <(requires "$m" | grep "^$prefix/" || true)
	done
	want=$(for m in $ws; do echo "$prefix/$m $version => ./$m"; done)
	have=$(go work edit -print | awk '
		$1 == "replace" && $2 == "(" { blk = 1; next }
		blk && $1 == ")" { blk = 0; next }
		blk && $1 != "//" { print; next }
		$1 == "replace" { $1 = ""; print }' | sed 's/^[[:space:]]*//' | sort)
	if [ "$want" != "$have" ]; then
		echo "go.work: its replace directives are not each module at $version by its directory:"
		diff <(echo "$want") <(echo "$have") | sed -n 's/^</  missing:/p; s/^>/  unwanted:/p'
		fail=1
	fi
	[ -z "$fail" ]
}

# tidy <dir> <fix>: compare (or, with fix=1, replace) the module's go.mod
# and go.sum with what tidying makes of them once the siblings are
# published as they are in this tree.
tidy() {
	local m=$1 fix=$2 tmp s fail=
	tmp=$(mktemp -d)
	cp "$m/go.mod" "$tmp/go.mod"
	touch "$tmp/go.sum"
	[ ! -f "$m/go.sum" ] || cp "$m/go.sum" "$tmp/go.sum"
	for s in $(workspace_modules); do
		[ "$s" = "$m" ] || go mod edit -replace="$prefix/$s=$root/$s" "$tmp/go.mod"
	done
	if ! (cd "$m" && GOWORK=off GOFLAGS=-mod=mod go mod tidy -modfile="$tmp/go.mod" >"$tmp/log" 2>&1); then
		echo "$m: go mod tidy (GOWORK=off, siblings from this tree) failed:"; cat "$tmp/log"
		rm -rf "$tmp"; return 1
	fi
	for s in $(workspace_modules); do
		go mod edit -dropreplace="$prefix/$s" "$tmp/go.mod"
	done
	# Siblings newly needed come out at a placeholder version.
	for s in $(siblings "$tmp"); do
		go mod edit -require="$prefix/$s@$version" "$tmp/go.mod"
	done
	# Checksums of siblings are not tidy's business here (replaced by
	# directories they have none); `sums` records them once published.
	{ grep "^$prefix/" "$m/go.sum" 2>/dev/null || true; grep -v "^$prefix/" "$tmp/go.sum" || true; } | sort >"$tmp/go.sum.want"
	if [ "$fix" = 1 ]; then
		cp "$tmp/go.mod" "$m/go.mod"
		if [ -s "$tmp/go.sum.want" ]; then cp "$tmp/go.sum.want" "$m/go.sum"; else rm -f "$m/go.sum"; fi
	else
		if ! diff -u "$m/go.mod" "$tmp/go.mod" >"$tmp/diff"; then
			echo "$m/go.mod is not tidy as published:"; cat "$tmp/diff"; fail=1
		fi
		if ! diff -u <(sort "$m/go.sum" 2>/dev/null || true) "$tmp/go.sum.want" >"$tmp/diff"; then
			echo "$m/go.sum is not tidy as published:"; head -40 "$tmp/diff"; fail=1
		fi
	fi
	rm -rf "$tmp"
	[ -z "$fail" ]
}

# ready <dir>: the module's go.sum holds the checksum of every sibling it
# requires (their go.mod and their content).
ready() {
	local s
	for s in $(siblings "$1"); do
		grep -q "^$prefix/$s $version/go.mod " "$1/go.sum" 2>/dev/null || return 1
		grep -q "^$prefix/$s $version h1:" "$1/go.sum" 2>/dev/null || return 1
	done
}

tag_name() { echo "$1/$version"; }

cmd=${1:-}
shift || true
case "$cmd" in
check)
	fix=0 quick=
	case "${1:-}" in
	--fix) fix=1 ;;
	--quick) quick=1 ;;
	"") ;;
	*) die "check: unknown flag $1 (want --fix or --quick)" ;;
	esac
	fail=
	check_versions || fail=1
	for m in $(workspace_modules); do
		[ -f "$m/go.mod" ] && [ -z "$quick" ] || continue
		tidy "$m" "$fix" || fail=1
	done
	[ -z "$fail" ] || die "go.work and the go.mod files disagree (see above; scripts/release.sh check --fix tidies)"
	echo "release.sh: $(workspace_modules | wc -l) modules, all in go.work, siblings required at $version$([ -n "$quick" ] || echo ", tidy")"
	;;
plan)
	for m in $(order); do
		if git rev-parse -q --verify "refs/tags/$(tag_name "$m")" >/dev/null; then
			state=tagged
		elif ready "$m"; then
			state=ready
		else
			state="waits for its siblings' checksums (sums)"
		fi
		echo "$(tag_name "$m")  $state  requires: $(siblings "$m" | tr '\n' ' ')"
	done
	;;
bump)
	new=${1:-}
	[[ "$new" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "bump: want a version like v0.2.0, got '$new'"
	echo "$new" >scripts/release-version
	for m in $(workspace_modules); do
		go work edit -dropreplace="$prefix/$m@$version" -replace="$prefix/$m@$new=./$m"
		for s in $(siblings "$m"); do
			go mod edit -require="$prefix/$s@$new" "$m/go.mod"
		done
	done
	echo "release.sh: every sibling require is now at $new; commit, then scripts/release.sh plan"
	;;
sums)
	# For each untagged module whose siblings are all tagged (and pushed:
	# the module proxy must serve them), tidy with GOWORK=off so go.sum
	# takes the siblings' checksums from the checksum database.
	for m in $(order); do
		git rev-parse -q --verify "refs/tags/$(tag_name "$m")" >/dev/null && continue
		ready "$m" && continue
		ok=1
		for s in $(siblings "$m"); do
			git rev-parse -q --verify "refs/tags/$(tag_name "$s")" >/dev/null || ok=
		done
		[ -n "$ok" ] || continue
		echo "== $m: GOWORK=off go mod tidy"
		(cd "$m" && GOWORK=off go mod tidy)
	done
	;;
tag)
	apply=
	[ "${1:-}" = "--apply" ] && apply=1
	[ -z "$(git status --porcelain)" ] || die "tag: the worktree has changes; commit them first"
	check_versions || die "tag: go.work and the go.mod files disagree (scripts/release.sh check)"
	for m in $(order); do
		t=$(tag_name "$m")
		if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
			echo "$t: already tagged"
			continue
		fi
		if ! ready "$m"; then
			echo "$t: not yet: its go.sum lacks the checksums of $(siblings "$m" | tr '\n' ' ')at $version;"
			echo "  push the tags above, then run scripts/release.sh sums, commit, and tag again"
			break
		fi
		if [ -n "$apply" ]; then
			git tag -a "$t" -m "$prefix/$m $version"
			echo "$t: tagged $(git rev-parse --short HEAD)"
		else
			echo "$t: would tag $(git rev-parse --short HEAD) (dry run; --apply creates the tag)"
		fi
	done
	echo "release.sh: nothing is pushed; push the new tags with: git push origin <tag>..."
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
