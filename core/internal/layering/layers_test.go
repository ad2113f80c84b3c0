package layering

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A layerRule forbids packages of core to depend on others. Inside core
// the dependencies point from the runtime and the fleet to the ports, and
// from the ports to the formats, never back:
//
//   - formats (ltx, wal, kvvalue): encodings of bytes, no I/O; ltx and
//     wal use only the leaves core/page (a database page and the pool of
//     page buffers, which core/driver names driver.Page and
//     driver.PagePool) and core/layout (the bucket's key layout);
//   - ports (driver, durability, lease, store, wakeport): the contracts the
//     runtime and the fleet meet through;
//   - the runtime (cell) and the fleet (fleet, wake, peer, shard), which
//     never import each other; core/host wires them together.
type layerRule struct {
	// pkgs are the packages the rule is about (paths under core/). Each
	// must exist, so that a rename cannot make a rule pass vacuously.
	pkgs []string
	// direct limits the rule to direct imports; otherwise every package
	// the code links (go list's Deps) counts.
	direct bool
	// forbidden are the packages they must not depend on; the entry "*"
	// stands for every CellB package not listed in allowed.
	forbidden []string
	allowed   []string
	why       string
}

var (
	fleet       = []string{"fleet", "wake", "peer", "shard"}
	runtimePkgs = []string{"cell"}
)

var layerRules = []layerRule{
	{pkgs: fleet, forbidden: runtimePkgs,
		why: "the fleet plugs into the runtime only through ports (core/wakeport, core/lease)"},
	{pkgs: []string{"atomicfile"}, forbidden: []string{"*"},
		why: "the atomic file helper is a leaf every layer (drivers, shards, the CLI) uses: it imports no CellB package"},
	{pkgs: []string{"progress"}, forbidden: []string{"*"},
		why: "the progress display is a leaf for command-line programs: it imports no CellB package"},
	{pkgs: []string{"wake"}, forbidden: []string{"cell"},
		why: "core/wake implements core/wakeport's Publisher and calls its Waker; it must not import the runtime"},
	{pkgs: runtimePkgs, forbidden: fleet,
		why: "the runtime reaches the fleet only through ports"},
	{pkgs: runtimePkgs, direct: true, forbidden: []string{"store"},
		why: "the runtime needs no bucket: logs and leases are handed to it as ports"},
	{pkgs: []string{"kvvalue"}, forbidden: []string{"*"},
		why: "the KV value codec is a format: it imports no port and nothing of the runtime"},
	// ltx and wal carry pages as page.Page (and wal recycles them through
	// page.Pool), the types core/driver names Page and PagePool; layout is
	// the bucket's key layout (names and record codecs, no I/O), which the
	// LTX keys are part of. Both are leaves, so no port is linked through
	// them.
	{pkgs: []string{"ltx", "wal"}, forbidden: []string{"*"}, allowed: []string{"page", "layout"},
		why: "formats import no port (pages are core/page's) and nothing of the runtime or the fleet"},
	{pkgs: []string{"page"}, forbidden: []string{"*"},
		why: "the page types are a leaf the driver port and the formats share: they import no CellB package"},
	{pkgs: []string{"layout"}, forbidden: []string{"*"},
		why: "the bucket layout is a leaf (key names and record codecs): it imports no CellB package"},
	{pkgs: fleet, forbidden: []string{"ltx"},
		why: "ownership does not know the LTX format: it learns every log's keys from core/layout"},
	{pkgs: []string{"wakeport"}, forbidden: append(append([]string{}, runtimePkgs...), fleet...),
		why: "a port imports neither of the sides it connects"},
	{pkgs: []string{"metrics"}, forbidden: []string{"*"}, allowed: []string{"store", "clock", "layout"},
		why: "the instruments are a leaf the runtime and the fleet both record on: core/metrics links only the store port (to wrap the bucket) and what it links"},
	{pkgs: []string{"health"}, forbidden: []string{"*"},
		why: "the admin endpoints know neither the host nor a metrics format: core/health imports no CellB package"},
	// cell.Stub answers a failed Fetch with core/httperr, so the mapping
	// names the errors it answers through leaves that core/cell and
	// core/peer alias, never through those packages.
	{pkgs: []string{"httperr"}, forbidden: []string{"*"}, allowed: []string{"cellerr", "peererr", "lease", "layout", "driver", "page"},
		why: "the error-to-HTTP mapping is linked by the runtime (cell.Stub answers with it): it names the runtime's and the peer port's errors through core/cellerr and core/peererr, and links only those leaves and the ports"},
	{pkgs: []string{"cellerr"}, forbidden: []string{"*"},
		why: "the runtime's answered errors are a leaf core/httperr names: core/cellerr imports no CellB package"},
	{pkgs: []string{"peererr"}, forbidden: []string{"*"}, allowed: []string{"lease", "layout"},
		why: "the peer port's answered errors are a leaf core/httperr names: core/peererr links only the lease port (a ForwardError carries its refusal)"},
}

// layerViolations checks rules against a package graph and returns one
// line per broken rule.
func layerViolations(pkgs []pkg, rules []layerRule) []string {
	byPath := map[string]pkg{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	core := func(name string) string { return prefix + "core/" + name }
	var out []string
	for _, r := range rules {
		for _, name := range r.pkgs {
			p, ok := byPath[core(name)]
			if !ok {
				out = append(out, fmt.Sprintf("core/%s: no such package (a layering rule names it: %s)", name, r.why))
				continue
			}
			deps := p.Deps
			if r.direct {
				deps = p.Imports
			}
			for _, d := range deps {
				if !strings.HasPrefix(d, prefix) || d == p.ImportPath {
					continue
				}
				rel := strings.TrimPrefix(d, prefix+"core/")
				bad := false
				for _, f := range r.forbidden {
					if f == "*" && !slices.Contains(r.allowed, rel) || rel == f || strings.HasPrefix(rel, f+"/") {
						bad = true
					}
				}
				if bad {
					how := "links"
					if r.direct {
						how = "imports"
					}
					out = append(out, fmt.Sprintf("core/%s %s %s: %s", name, how, strings.TrimPrefix(d, prefix), r.why))
				}
			}
		}
	}
	return out
}

func TestLayersInsideCore(t *testing.T) {
	for _, v := range layerViolations(listPackages(t, workspaceRoot(t)), layerRules) {
		t.Error(v)
	}
}

// TestLayerRulesCatchTheOldGraph feeds the rules the dependencies core had
// before the wake port and the KV value codec left core/cell (and before
// the fleet learned the LTX keys from core/layout, the formats took their
// page types from core/page instead of the driver port, and core/httperr
// named the errors it answers through leaves): each broken layer must be
// reported.
func TestLayerRulesCatchTheOldGraph(t *testing.T) {
	c := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, prefix+"core/"+n)
		}
		return out
	}
	p := func(name string, imports, deps []string) pkg {
		return pkg{ImportPath: prefix + "core/" + name, Imports: imports, Deps: deps}
	}
	old := []pkg{
		p("cell", c("clock", "driver", "durability", "lease", "store"), c("clock", "driver", "durability", "lease", "store")),
		p("wake", c("cell", "clock", "durability", "fleet", "store"), c("cell", "clock", "driver", "durability", "fleet", "lease", "store")),
		p("fleet", c("lease", "ltx", "store"), c("driver", "lease", "ltx", "store")),
		p("peer", nil, nil),
		p("shard", nil, nil),
		p("ltx", c("driver"), c("driver")),
		p("wal", c("driver", "store"), c("driver", "store")),
		// httperr before the runtime's and the peer port's errors moved to
		// leaves (cell.HTTPStatus was the runtime's half of the mapping).
		p("httperr", c("cell", "peer"), c("cell", "clock", "driver", "lease", "peer", "store")),
	}
	got := strings.Join(layerViolations(old, layerRules), "\n")
	for _, want := range []string{
		"core/wake links core/cell: the fleet plugs into the runtime only through ports",
		"core/wake links core/cell: core/wake implements core/wakeport's Publisher",
		"core/cell imports core/store: the runtime needs no bucket",
		"core/kvvalue: no such package",
		"core/wakeport: no such package",
		"core/wal links core/store: formats import no port",
		"core/fleet links core/ltx: ownership does not know the LTX format",
		"core/layout: no such package",
		"core/page: no such package",
		"core/ltx links core/driver: formats import no port",
		"core/wal links core/driver: formats import no port",
		"core/httperr links core/cell: the error-to-HTTP mapping is linked by the runtime",
		"core/httperr links core/peer: the error-to-HTTP mapping is linked by the runtime",
		"core/cellerr: no such package",
		"core/peererr: no such package",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the rules do not report %q; they report:\n%s", want, got)
		}
	}
}
