package celltest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// bucketMode is one durability mode the bucket-wins cases run under.
type bucketMode struct {
	name string
	// durable: a commit is acknowledged only once it is in the bucket (the
	// LTX and changeset logs); a backup acknowledges at once.
	durable bool
	// sessions: the mode needs driver.Sessioner (the changeset log).
	sessions bool
	open     func(s store.Store) (durability.Log, error)
}

func bucketModes() []bucketMode {
	return []bucketMode{
		{"ltx", true, false, func(s store.Store) (durability.Log, error) {
			return ltxlog.New(ltxlog.Options{Store: s, Logger: quietLogger(), CompactAfter: -1,
				UploadRetries: -1, RetryDelay: time.Millisecond})
		}},
		{"changeset", true, true, func(s store.Store) (durability.Log, error) {
			return changeset.New(changeset.Options{Store: s, Logger: quietLogger(),
				UploadRetries: -1, RetryDelay: time.Millisecond})
		}},
		{"backup", false, false, func(s store.Store) (durability.Log, error) {
			// Saved only on an orderly Close: no periodic save during a case.
			return backup.New(backup.Options{Store: s, Logger: quietLogger(), Interval: 24 * time.Hour})
		}},
	}
}

func bucketCases() []caseDef {
	var out []caseDef
	for _, m := range bucketModes() {
		out = append(out,
			caseDef{"bucket/" + m.name + "/empty-bucket-starts-empty", func(c *checkT) { caseEmptyBucketStartsEmpty(c, m) }},
			caseDef{"bucket/" + m.name + "/bucket-replaces-local", func(c *checkT) { caseBucketReplacesLocal(c, m) }},
		)
	}
	out = append(out, caseDef{"bucket/ltx/delta-pages", caseDeltaPages})
	return out
}

// bucketLog builds the mode's log on s, skipping the case when the
// harness's driver cannot run it.
func (c *checkT) bucketLog(m bucketMode, s store.Store) durability.Log {
	if m.sessions && !c.h.Driver.Capabilities().Sessions {
		c.skipf("the %s log needs a driver with sessions; %s has none", m.name, c.h.Driver.Name())
	}
	l, err := m.open(s)
	if err != nil {
		c.fatalf("open the %s log: %v", m.name, err)
	}
	return l
}

// bucketWinsLease grants every cell with BucketWins true, as a fleet lease
// does, under a new epoch each time.
func bucketWinsLease() *testLease {
	l := newTestLease()
	l.bucketWins = true
	return l
}

// A local file holding commits that never reached the bucket is discarded
// when the bucket wins and holds nothing for the cell: the cell starts
// empty, and the lost write is never made durable later. (In the durable
// modes the caller of that write got "Durable Object reset because a commit
// failed to become durable"; a backup acknowledged it and then crashed
// before its first save.)
func caseEmptyBucketStartsEmpty(c *checkT, m bucketMode) {
	bucket := newGateStore(memstore.New())
	ls := bucketWinsLease()
	rt := c.runtime(rtConfig{log: c.bucketLog(m, bucket), lease: ls})
	pc := c.probeClass(rt, "Bucket", nil)
	s := pc.stub("a")
	if m.durable {
		bucket.hold()
		wrote := make(chan struct{})
		w := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
			defer close(wrote)
			return p.incr(ctx, "n")
		})
		wait(c, wrote, "the write")
		readRan := make(chan struct{})
		r := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
			defer close(readRan)
			return p.get(ctx, "n")
		})
		// The read runs after the write's turn, so the write is committed
		// locally (and waits for the held bucket).
		wait(c, readRan, "the read after the write")
		bucket.fail(errors.New("injected bucket failure"))
		for _, ch := range []<-chan result[int64]{w, r} {
			if v := wait(c, ch, "a reply after the failed upload"); !isBroken(v.err) || !strings.Contains(v.err.Error(), "durable") {
				c.fatalf("a reply behind a failed upload returned (%d, %v), want a reset because a commit failed to become durable", v.v, v.err)
			}
		}
		bucket.heal()
	} else {
		if v := must(c, s, "write", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") }); v != 1 {
			c.fatalf("the first increment returned %d, want 1", v)
		}
		rt.EvictAll() // a crash before the first backup
		c.eventually("the cell to leave memory after EvictAll", func() bool { return !slices.Contains(rt.ActiveCells(), s.Key()) })
	}
	if n := bucket.objects(c, layout.CellPrefix(s.Key())); len(n) != 0 {
		c.fatalf("the bucket holds %v for the cell; the case needs it empty", n)
	}
	v := must(c, s, "read after the cell was taken again", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	if v != 0 {
		c.errorf("after the cell was taken again from a bucket holding nothing for it, n=%d, want 0: "+
			"a write that never reached the bucket came back from the local file", v)
	}
	v = must(c, s, "write after the cell was taken again", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	if v != 1 {
		c.errorf("the first durable increment returned %d, want 1", v)
	}
	c.closeRuntime(rt)
	// The bucket now holds n=1 and nothing of the lost write.
	rt2 := c.runtime(rtConfig{log: c.bucketLog(m, bucket), lease: ls})
	s2 := c.probeClass(rt2, "Bucket", nil).stub("a")
	if v := must(c, s2, "read on another node", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") }); v != 1 {
		c.errorf("a restore from the bucket reads n=%d, want 1", v)
	}
}

// When the bucket wins, a non-empty local file is replaced by the bucket's
// newest state: here the file of an earlier owner, older than what another
// owner wrote since.
func caseBucketReplacesLocal(c *checkT, m bucketMode) {
	bucket := memstore.New()
	ls := bucketWinsLease()
	dirA, dirB := filepath.Join(c.dir, "a"), filepath.Join(c.dir, "b")
	step := func(dir, what string, fn func(ctx context.Context, p *probe) (int64, error)) int64 {
		rt := c.runtime(rtConfig{dir: dir, log: c.bucketLog(m, bucket), lease: ls})
		v := must(c, c.probeClass(rt, "Bucket", nil).stub("a"), what, fn)
		c.closeRuntime(rt)
		return v
	}
	incr := func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") }
	if v := step(dirA, "write on node A", incr); v != 1 {
		c.fatalf("the first increment returned %d, want 1", v)
	}
	if v := step(dirB, "write on node B", incr); v != 2 {
		c.errorf("node B, starting from an empty local file, counted to %d, want 2 (restored from the bucket)", v)
	}
	v := step(dirA, "read on node A again", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	if v != 2 {
		c.errorf("node A reads n=%d from its old local file, want 2: the bucket's newest state must replace it", v)
	}
}

// After the snapshot that opens an epoch, an LTX file carries only the
// pages its commits changed: one small write to a cell of many pages
// uploads a few pages, not the database. Runs with and without the
// driver's page capture (where the log diffs commit-time images).
func caseDeltaPages(c *checkT) {
	bucket := memstore.New()
	rt := c.runtime(rtConfig{log: c.bucketLog(bucketModes()[0], bucket), lease: bucketWinsLease()})
	s := c.probeClass(rt, "Pages", nil).stub("a")
	must(c, s, "fill", func(ctx context.Context, p *probe) (int, error) {
		if _, err := p.st.SQL().Exec(ctx, "CREATE TABLE big(k INTEGER PRIMARY KEY, v BLOB)"); err != nil {
			return 0, err
		}
		blob := make([]byte, 3000)
		for i := range 60 {
			for j := range blob {
				blob[j] = byte(i + j)
			}
			if _, err := p.st.SQL().Exec(ctx, "INSERT INTO big(k, v) VALUES(?, ?)", i, blob); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	before := c.ltxFiles(bucket, s.Key())
	must(c, s, "small write", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	after := c.ltxFiles(bucket, s.Key())
	if len(after) != len(before)+1 {
		c.fatalf("the small write added %d LTX files, want 1", len(after)-len(before))
	}
	last := after[len(after)-1]
	if after[0].Header.MinTXID != 1 || last.Header.Commit < 20 {
		c.fatalf("the epoch's files start at TXID %d and the database has %d pages, want a chain from TXID 1 and at least 20 pages",
			after[0].Header.MinTXID, last.Header.Commit)
	}
	var pgnos []uint32
	for _, pg := range last.Pages {
		pgnos = append(pgnos, pg.Pgno)
	}
	if len(last.Pages) > 4 {
		c.errorf("the file of one small write holds %d of the database's %d pages (%v), want at most 4: later LTX files carry only changed pages",
			len(last.Pages), last.Header.Commit, pgnos)
	}
}

// ltxFiles decodes every LTX file of the cell, in TXID order.
func (c *checkT) ltxFiles(s store.Store, key string) []*ltx.File {
	page, err := store.ListAll(c.ctx, s, store.ListOptions{Prefix: ltx.CellPrefix(key)})
	if err != nil {
		c.fatalf("list %s: %v", ltx.CellPrefix(key), err)
	}
	var out []*ltx.File
	for _, o := range page.Objects {
		if _, ok := ltx.ParseKey(o.Key); !ok {
			continue
		}
		obj, err := s.Get(c.ctx, o.Key)
		if err != nil {
			c.fatalf("read %s: %v", o.Key, err)
		}
		f, err := ltx.Decode(obj.Data)
		if err != nil {
			c.fatalf("decode %s: %v", o.Key, err)
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *ltx.File) int { return int(a.Header.MinTXID) - int(b.Header.MinTXID) })
	return out
}

// gateStore is a bucket whose writes a case can hold and then fail.
type gateStore struct {
	store.Store
	mu   sync.Mutex
	held chan struct{} // closed when the held writes go on
	err  error
}

func newGateStore(s store.Store) *gateStore { return &gateStore{Store: s} }

// hold makes every Put wait until fail.
func (s *gateStore) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = make(chan struct{})
}

// fail fails every held Put, and every later one until heal, with err.
func (s *gateStore) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
	if s.held != nil {
		close(s.held)
		s.held = nil
	}
}

// heal lets writes through again.
func (s *gateStore) heal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = nil
}

func (s *gateStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	return s.Store.Put(ctx, key, data, opts)
}

// objects lists the keys under prefix.
func (s *gateStore) objects(c *checkT, prefix string) []string {
	page, err := store.ListAll(c.ctx, s, store.ListOptions{Prefix: prefix})
	if err != nil {
		c.fatalf("list %s: %v", prefix, err)
	}
	var keys []string
	for _, o := range page.Objects {
		keys = append(keys, o.Key)
	}
	return keys
}
