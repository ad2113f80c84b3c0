package admin

import (
	"context"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestInspectShowsSingleHostNodeLogs: a single host process's node log
// session shows with its bundles and its state, read from its lock file:
// open while the session's lock is held, dead once its process let it go
// (unknown without the lock directory). A fleet node's session of the
// same bucket is not taken for one.
func TestInspectShowsSingleHostNodeLogs(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	dir := t.TempDir()
	node, err := nodelog.LocalNodeID(dir)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := nodelog.OpenLocalSession(dir, node)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(false)
	gen := sess.Generation()
	put(t, s, layout.BundleKey(node, gen, 1, 0), []byte("0123456789"))
	put(t, s, layout.BundleKey(node, gen, 1, 1), []byte("01234"))
	put(t, s, layout.BundleKey("node_f", "gen1", 1, 0), []byte("a fleet node's"))

	o := opts()
	o.LockDir = dir
	find := func(o Options) HostLog {
		t.Helper()
		r, err := Inspect(ctx, s, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.HostLogs) != 1 {
			t.Fatalf("host logs %+v; want the one session", r.HostLogs)
		}
		var out strings.Builder
		WriteReport(&out, r)
		if !strings.Contains(out.String(), node+"/"+gen) || !strings.Contains(out.String(), "2 bundles") {
			t.Fatalf("text report lacks the session:\n%s", out.String())
		}
		return r.HostLogs[0]
	}
	got := find(o)
	if got.Node != node || got.Generation != gen || got.State != nodelog.LocalOpen || got.Bundles != 2 || got.BundleBytes != 15 || got.OldestBundleMs == nil {
		t.Fatalf("while held: %+v", got)
	}
	if got := find(opts()); got.State != nodelog.LocalUnknown {
		t.Fatalf("without the lock directory: %+v", got)
	}
	sess.Close(false)
	if got := find(o); got.State != nodelog.LocalDead {
		t.Fatalf("once let go: %+v", got)
	}
}
