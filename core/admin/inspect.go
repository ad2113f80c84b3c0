package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/wake"
)

// Report is what Inspect finds in a bucket. Its JSON form is stable
// (docs/cli.md, "cellb inspect"): fields are only ever added.
type Report struct {
	// NowMs is the time leases were judged live against (Unix ms).
	NowMs int64 `json:"now_ms"`
	// Fleet: the bucket holds a node lease or an ownership record. A
	// bucket only single-host nodes wrote (cellb serve without --bucket:
	// ownership by shard locks) has neither; there a missing record is not
	// a lost one, and no record-lost finding is reported.
	Fleet bool   `json:"fleet"`
	Nodes []Node `json:"nodes"`
	// HostLogs are the node logs of single host processes (cellb serve
	// without --bucket) the bucket holds, one per process session.
	HostLogs []HostLog `json:"host_logs"`
	Cells    []Cell    `json:"cells"`
	Wake     Wake      `json:"wake"`
}

// Errors returns every problem the report holds: malformed records (each
// a *layout.RecordError naming its key) and failed reads, in report order.
func (r *Report) Errors() []error {
	var errs []error
	for _, n := range r.Nodes {
		if n.Err != nil {
			errs = append(errs, n.Err)
		}
	}
	for _, l := range r.HostLogs {
		if l.Err != nil {
			errs = append(errs, l.Err)
		}
	}
	for _, c := range r.Cells {
		if c.Err != nil {
			errs = append(errs, c.Err)
		}
	}
	return append(errs, r.Wake.errs...)
}

// Node is one node lease, nodes/<id>.json.
type Node struct {
	ID        string `json:"id"`
	Live      bool   `json:"live"`
	Addr      string `json:"addr"`
	ExpiresMs uint64 `json:"expires_ms"`
	// Log is the node log the lease carries (null when none: a node
	// writing per cell, or celld without one).
	Log *NodeLog `json:"log"`
	// Error is Err's message: the lease did not decode or could not be read.
	Error string `json:"error,omitempty"`
	Err   error  `json:"-"`
}

// NodeLog is a node's node log: its state in the lease and the bundles of
// its session still in the bucket (not yet tiered into every cell's
// prefix).
type NodeLog struct {
	// State is open, recovering or sealed; Epoch the log epoch; Active
	// whether acknowledgements rode on celld followers; Claimant the node
	// recovering it ("" when none).
	State    string `json:"state"`
	Epoch    uint64 `json:"epoch"`
	Active   bool   `json:"active"`
	Claimant string `json:"claimant"`
	// Generation is the session's (the lease's ownership_index_generation).
	Generation string `json:"generation"`
	// Bundles and BundleBytes are the session's bundles in the bucket;
	// OldestBundleMs when the oldest was written (null when none): its
	// rows are the oldest that may not be in their cells' prefixes yet
	// (a covered bundle waits for its deletion batch: up to 2 s, or
	// until 32 are covered).
	Bundles        int    `json:"bundles"`
	BundleBytes    int64  `json:"bundle_bytes"`
	OldestBundleMs *int64 `json:"oldest_bundle_ms"`
}

// HostLog is one single host process's node log session: its bundles in
// the bucket under log/<node>/<generation>/. Such a session has no node
// lease; its state is its lock file's, read from Options.LockDir.
type HostLog struct {
	Node       string `json:"node"`
	Generation string `json:"generation"`
	// State is open (its process holds the session's lock), recovering
	// (another process folds it now), dead (its process is gone: the next
	// process to start or take over a shard folds it) or unknown (no
	// Options.LockDir, or no lock file there: another machine's data
	// directory, or folded since the listing).
	State string `json:"state"`
	// Bundles and BundleBytes are the session's bundles in the bucket;
	// OldestBundleMs when the oldest was written (null when none): its
	// rows are the oldest not yet in their cells' prefixes.
	Bundles        int    `json:"bundles"`
	BundleBytes    int64  `json:"bundle_bytes"`
	OldestBundleMs *int64 `json:"oldest_bundle_ms"`
	Error          string `json:"error,omitempty"`
	Err            error  `json:"-"`
}

// The states of a cell's ownership record (Cell.Record).
const (
	RecordHeld      = "held"      // names a node
	RecordReleased  = "released"  // "node": ""
	RecordMissing   = "missing"   // no own.json
	RecordMalformed = "malformed" // own.json does not decode
)

// Cell is one cell of the bucket.
type Cell struct {
	Key   string `json:"cell"`
	Class string `json:"class"`
	ID    string `json:"id"`
	// Record is RecordHeld, RecordReleased, RecordMissing or
	// RecordMalformed; Owner and Epoch are the record's.
	Record string `json:"record"`
	Owner  string `json:"owner"`
	Epoch  uint64 `json:"epoch"`
	// OwnerLive: Owner's node lease is live now.
	OwnerLive bool `json:"owner_live"`
	// LogEpoch is the newest epoch any of the cell's logs holds; NewestTXID
	// the newest TXID of the LTX log's newest epoch (0 without LTX).
	LogEpoch   uint64 `json:"log_epoch"`
	NewestTXID uint64 `json:"newest_txid"`
	// LogObjects and LogBytes add up every log of the cell.
	LogObjects int64 `json:"log_objects"`
	LogBytes   int64 `json:"log_bytes"`
	// Modes names the durability modes whose log holds objects.
	Modes []string  `json:"modes"`
	Logs  []LogStat `json:"logs"`
	// AlarmDueMs is the alarm the wake index holds for the cell (Unix ms),
	// null when none.
	AlarmDueMs *int64 `json:"alarm_due_ms"`
	// Findings is what is wrong with the cell; empty when healthy.
	Findings []Finding `json:"findings"`
	// Error is Err's message: own.json did not decode, or a read failed.
	Error string `json:"error,omitempty"`
	Err   error  `json:"-"`

	version    store.Version     // own.json's, for the repair's CAS
	ownerLease *layout.NodeLease // the owner's lease when Owner != ""
}

// LogStat is one durability mode's log of a cell.
type LogStat struct {
	Mode    string `json:"mode"`
	Objects int64  `json:"objects"`
	Bytes   int64  `json:"bytes"`
	// NewestEpoch is the newest epoch directory; Newest the highest TXID
	// (ltx) or sequence number (changeset, backup) in it.
	NewestEpoch uint64 `json:"newest_epoch"`
	Newest      uint64 `json:"newest"`
	// Epochs is filled by InspectCell only: every epoch, oldest first.
	Epochs []EpochStat `json:"epochs,omitempty"`
}

// EpochStat is one epoch directory of a log.
type EpochStat struct {
	Epoch   uint64 `json:"epoch"`
	Objects int64  `json:"objects"`
	Bytes   int64  `json:"bytes"`
	// First and Newest are the lowest and highest TXID (ltx) or sequence
	// number (changeset, backup) of the epoch.
	First  uint64 `json:"first"`
	Newest uint64 `json:"newest"`
}

// Wake summarizes the wake index.
type Wake struct {
	// Format is wake/format.json's format, null without a marker.
	Format    *int `json:"format"`
	Migrating bool `json:"migrating"`
	// Waker holds the waker role (wake/waker.json), "" when none.
	Waker          string `json:"waker"`
	WakerLive      bool   `json:"waker_live"`
	WakerExpiresMs uint64 `json:"waker_expires_ms"`
	// Entries counts the publications under wake/entries/ (obsolete ones
	// not yet deleted included), Seeds celld's migration seeds among them,
	// Due those whose minute has begun, Minutes the distinct minutes and
	// Cells the distinct cells; Retired counts retirement certificates.
	Entries int `json:"entries"`
	Seeds   int `json:"seeds"`
	Due     int `json:"due"`
	Minutes int `json:"minutes"`
	Cells   int `json:"cells"`
	Retired int `json:"retired"`
	// Errors are records and keys of the index that do not decode.
	Errors []string `json:"errors,omitempty"`
	errs   []error
}

func (w *Wake) addErr(err error) {
	w.errs = append(w.errs, err)
	w.Errors = append(w.Errors, err.Error())
}

// wakeIndex is what the listing of the wake index says per cell.
type wakeIndex struct {
	entries map[string][]wake.EntryRef // by cell, seeds left out
	retired map[string]bool            // cells with a certificate
}

// Inspect reads the whole bucket: nodes, cells and the wake index. It
// fails only when a listing fails or ctx ends; a record that does not
// decode, or a read of one cell that fails, is reported on its node or
// cell and the rest is read.
func Inspect(ctx context.Context, s store.Store, opts Options) (*Report, error) {
	now := opts.clock().Now().UnixMilli()
	r := &Report{NowMs: now, Nodes: []Node{}, Cells: []Cell{}}
	nodes, err := readNodes(ctx, s, opts, now)
	if err != nil {
		return nil, err
	}
	r.Nodes = nodes
	if r.HostLogs, err = readHostLogs(ctx, s, opts); err != nil {
		return nil, err
	}
	w, idx, err := readWake(ctx, s, opts, now)
	if err != nil {
		return nil, err
	}
	r.Wake = w
	var keys []string
	err = store.ListEach(ctx, s, store.ListOptions{Prefix: layout.CellsPrefix, Delimiter: "/", Limit: opts.PageSize}, func(p store.ListPage) error {
		for _, pre := range p.Prefixes {
			if c, ok := layout.CellOfPrefix(pre); ok && c != "" {
				keys = append(keys, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.Cells = make([]Cell, len(keys))
	leases := newLeaseCache()
	var mu sync.Mutex
	var done int64
	total := int64(len(keys))
	err = forEach(ctx, len(keys), opts.concurrency(), func(i int) {
		c := readCell(ctx, s, opts, keys[i], now, leases, idx, false)
		r.Cells[i] = *c
		if opts.Progress != nil && total >= ProgressMinCells {
			mu.Lock()
			done++
			opts.Progress(done, total)
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, err
	}
	r.Fleet = len(nodes) > 0
	for _, c := range r.Cells {
		r.Fleet = r.Fleet || c.Record != RecordMissing
	}
	for i := range r.Cells {
		if !r.Fleet {
			r.Cells[i].Findings = slices.DeleteFunc(r.Cells[i].Findings, func(f Finding) bool { return f.Kind == FindRecordLost })
		}
	}
	return r, nil
}

// InspectCell reads one cell in detail: its record, every epoch of every
// log, its findings and its alarm. A cell the bucket holds nothing for is
// a *NoCellError.
func InspectCell(ctx context.Context, s store.Store, cell string, opts Options) (*Cell, error) {
	now := opts.clock().Now().UnixMilli()
	_, idx, err := readWake(ctx, s, opts, now)
	if err != nil {
		return nil, err
	}
	c := readCell(ctx, s, opts, cell, now, newLeaseCache(), idx, true)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.Record == RecordMissing && c.LogObjects == 0 && c.Err == nil {
		return nil, &NoCellError{Cell: cell}
	}
	if err := judgeAsTheBucket(ctx, s, opts, c); err != nil {
		return nil, err
	}
	return c, nil
}

// judgeAsTheBucket gives one cell the verdict Inspect gives it in the
// whole bucket's report: a missing record is lost only in a fleet bucket.
// A cell without a record can tell that only from the rest of the bucket.
func judgeAsTheBucket(ctx context.Context, s store.Store, opts Options, c *Cell) error {
	if c.Record != RecordMissing || !slices.ContainsFunc(c.Findings, func(f Finding) bool { return f.Kind == FindRecordLost }) {
		return nil
	}
	fleet, err := IsFleet(ctx, s, opts)
	if err != nil {
		return err
	}
	if !fleet {
		c.Findings = slices.DeleteFunc(c.Findings, func(f Finding) bool { return f.Kind == FindRecordLost })
	}
	return nil
}

// IsFleet reports whether fleet nodes have written the bucket: it holds a
// node lease or any cell's ownership record. A bucket only single-host
// nodes wrote (ownership by shard locks) holds neither, and there a cell
// without a record is not a cell that lost one. It stops at the first
// record it finds.
func IsFleet(ctx context.Context, s store.Store, opts Options) (bool, error) {
	nodes, err := s.List(ctx, store.ListOptions{Prefix: layout.NodesPrefix, Limit: 1})
	if err != nil {
		return false, err
	}
	if len(nodes.Objects) > 0 {
		return true, nil
	}
	errFound := errors.New("found")
	err = store.ListEach(ctx, s, store.ListOptions{Prefix: layout.CellsPrefix, Delimiter: "/", Limit: opts.PageSize}, func(p store.ListPage) error {
		for _, pre := range p.Prefixes {
			c, ok := layout.CellOfPrefix(pre)
			if !ok || c == "" {
				continue
			}
			_, err := store.GetData(ctx, s, layout.OwnKey(c))
			switch {
			case err == nil:
				return errFound
			case !store.IsNotFound(err):
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return true, nil
	}
	return false, err
}

// readNodes lists nodes/ and reads every lease.
func readNodes(ctx context.Context, s store.Store, opts Options, now int64) ([]Node, error) {
	var ids []string
	err := store.ListEach(ctx, s, store.ListOptions{Prefix: layout.NodesPrefix, Limit: opts.PageSize}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			if id, ok := layout.NodeOfKey(o.Key); ok && layout.NodeKey(id) == o.Key {
				ids = append(ids, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, len(ids))
	err = forEach(ctx, len(ids), opts.concurrency(), func(i int) {
		n := Node{ID: ids[i]}
		key := layout.NodeKey(ids[i])
		obj, err := s.Get(ctx, key)
		if err == nil {
			var l layout.NodeLease
			if l, err = layout.DecodeNodeLease(key, obj.Data); err == nil {
				n.Live, n.Addr, n.ExpiresMs = l.Live(uint64(now)), l.Addr, l.ExpiresMs
				n.Log, err = readNodeLog(ctx, s, l)
			}
		}
		if err != nil && !store.IsNotFound(err) { // deleted since the listing: expired
			n.Err, n.Error = err, err.Error()
		}
		nodes[i] = n
	})
	return nodes, err
}

// readNodeLog is the node log a lease carries, with its session's bundles
// listed (one listing).
func readNodeLog(ctx context.Context, s store.Store, l layout.NodeLease) (*NodeLog, error) {
	if l.Log == nil {
		return nil, nil
	}
	nl := &NodeLog{State: l.Log.State, Epoch: l.Log.Epoch, Active: l.Log.Active, Generation: l.OwnershipIndexGeneration}
	if l.Log.Claimant != nil {
		nl.Claimant = *l.Log.Claimant
	}
	bundles, err := nodelog.ListBundles(ctx, s, l.Node, l.OwnershipIndexGeneration)
	for _, b := range bundles {
		nl.Bundles++
		nl.BundleBytes += b.Info.Size
		if ms := b.Info.Modified.UnixMilli(); !b.Info.Modified.IsZero() && (nl.OldestBundleMs == nil || ms < *nl.OldestBundleMs) {
			nl.OldestBundleMs = &ms
		}
	}
	return nl, err
}

// readHostLogs lists the single host node logs under log/ (node ids
// starting with nodelog.LocalNodePrefix) and their bundles, and reads each
// session's state from its lock file when opts.LockDir is set.
func readHostLogs(ctx context.Context, s store.Store, opts Options) ([]HostLog, error) {
	out := []HostLog{}
	nodes, err := store.ListAll(ctx, s, store.ListOptions{Prefix: layout.NodeLogPrefix, Delimiter: "/", Limit: opts.PageSize})
	if err != nil {
		return nil, err
	}
	for _, np := range nodes.Prefixes {
		node := strings.TrimSuffix(strings.TrimPrefix(np, layout.NodeLogPrefix), "/")
		if !strings.HasPrefix(node, nodelog.LocalNodePrefix) {
			continue
		}
		sessions, err := store.ListAll(ctx, s, store.ListOptions{Prefix: np, Delimiter: "/", Limit: opts.PageSize})
		if err != nil {
			return nil, err
		}
		for _, sp := range sessions.Prefixes {
			hl := HostLog{Node: node, Generation: strings.TrimSuffix(strings.TrimPrefix(sp, np), "/"), State: nodelog.LocalUnknown}
			bundles, err := nodelog.ListBundles(ctx, s, node, hl.Generation)
			if err != nil {
				return nil, err
			}
			for _, b := range bundles {
				hl.Bundles++
				hl.BundleBytes += b.Info.Size
				if ms := b.Info.Modified.UnixMilli(); !b.Info.Modified.IsZero() && (hl.OldestBundleMs == nil || ms < *hl.OldestBundleMs) {
					hl.OldestBundleMs = &ms
				}
			}
			if opts.LockDir != "" {
				if hl.State, err = nodelog.LocalState(opts.LockDir, hl.Generation); err != nil {
					hl.State, hl.Err, hl.Error = nodelog.LocalUnknown, err, err.Error()
				}
			}
			out = append(out, hl)
		}
	}
	return out, nil
}

// leaseCache reads each owner's lease once per Inspect.
type leaseCache struct {
	mu     sync.Mutex
	leases map[string]*leaseEntry
}

type leaseEntry struct {
	once  sync.Once
	lease *layout.NodeLease
	err   error
}

func newLeaseCache() *leaseCache {
	return &leaseCache{leases: map[string]*leaseEntry{}}
}

func (lc *leaseCache) get(ctx context.Context, s store.Store, node string) (*layout.NodeLease, error) {
	lc.mu.Lock()
	e := lc.leases[node]
	if e == nil {
		e = &leaseEntry{}
		lc.leases[node] = e
	}
	lc.mu.Unlock()
	e.once.Do(func() {
		key := layout.NodeKey(node)
		obj, err := s.Get(ctx, key)
		if store.IsNotFound(err) {
			return
		}
		if err != nil {
			e.err = err
			return
		}
		l, err := layout.DecodeNodeLease(key, obj.Data)
		if err != nil {
			e.err = err
			return
		}
		e.lease = &l
	})
	return e.lease, e.err
}

// readWake reads the wake index's records and lists its entries and
// certificates.
func readWake(ctx context.Context, s store.Store, opts Options, now int64) (Wake, wakeIndex, error) {
	var w Wake
	idx := wakeIndex{entries: map[string][]wake.EntryRef{}, retired: map[string]bool{}}
	if obj, err := s.Get(ctx, layout.WakeFormatKey); err == nil {
		if f, err := wake.DecodeFormat(obj.Data); err != nil {
			w.addErr(err)
		} else {
			w.Format, w.Migrating = &f.Format, f.Migrating
		}
	} else if !store.IsNotFound(err) {
		return w, idx, err
	}
	if obj, err := s.Get(ctx, layout.WakerKey); err == nil {
		if rec, err := wake.DecodeWaker(obj.Data); err != nil {
			w.addErr(err)
		} else {
			w.Waker, w.WakerExpiresMs, w.WakerLive = rec.Node, rec.ExpiresMs, rec.ExpiresMs > uint64(now)
		}
	} else if !store.IsNotFound(err) {
		return w, idx, err
	}
	minutes := map[string]bool{}
	err := store.ListEach(ctx, s, store.ListOptions{Prefix: layout.WakeEntriesPrefix, Limit: opts.PageSize}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			ref, err := wake.ParseEntryKey(o.Key)
			if err != nil {
				w.addErr(err)
				continue
			}
			w.Entries++
			minutes[ref.Minute] = true
			if ref.MinuteMs <= now {
				w.Due++
			}
			if ref.Seed {
				w.Seeds++
				continue
			}
			idx.entries[ref.Cell] = append(idx.entries[ref.Cell], ref)
		}
		return nil
	})
	if err != nil {
		return w, idx, err
	}
	w.Minutes, w.Cells = len(minutes), len(idx.entries)
	err = store.ListEach(ctx, s, store.ListOptions{Prefix: layout.WakeRetiredPrefix, Limit: opts.PageSize}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			if c, ok := layout.CellOfWakeRetiredKey(o.Key); ok {
				idx.retired[c] = true
				w.Retired++
			}
		}
		return nil
	})
	return w, idx, err
}

// readCell reads one cell: its record, its owner's lease, its logs and its
// alarm, and judges it. Errors land on the cell.
func readCell(ctx context.Context, s store.Store, opts Options, cell string, now int64, leases *leaseCache, idx wakeIndex, detail bool) *Cell {
	c := &Cell{Key: cell, Modes: []string{}, Logs: []LogStat{}, Findings: []Finding{}}
	c.Class, c.ID = splitCellKey(cell)
	fail := func(err error) *Cell {
		if c.Err == nil {
			c.Err, c.Error = err, err.Error()
		}
		return c
	}
	key := layout.OwnKey(cell)
	obj, err := s.Get(ctx, key)
	var rec *layout.OwnRecord
	var recErr error
	switch {
	case store.IsNotFound(err):
		c.Record = RecordMissing
	case err != nil:
		return fail(err)
	default:
		c.version = obj.Version
		r, err := layout.DecodeOwnRecord(key, obj.Data)
		if err != nil {
			c.Record, recErr = RecordMalformed, err
			fail(err)
		} else {
			rec = &r
			c.Owner, c.Epoch = r.Node, r.Epoch
			c.Record = RecordReleased
			if r.Node != "" {
				c.Record = RecordHeld
				// A lease that cannot be read leaves the owner's liveness
				// unknown: reported, and the rest of the cell still read.
				if l, err := leases.get(ctx, s, r.Node); err != nil {
					fail(fmt.Errorf("the owner's lease: %w", err))
				} else {
					c.ownerLease = l
					c.OwnerLive = l != nil && l.Live(uint64(now))
				}
			}
		}
	}
	stats, ltxFiles, err := readLogs(ctx, s, opts, cell, detail)
	if err != nil {
		return fail(err)
	}
	for _, st := range stats {
		if st.Objects == 0 {
			continue
		}
		c.Logs = append(c.Logs, st)
		c.Modes = append(c.Modes, st.Mode)
		c.LogObjects += st.Objects
		c.LogBytes += st.Bytes
		c.LogEpoch = max(c.LogEpoch, st.NewestEpoch)
		if st.Mode == layout.LTX().Name {
			c.NewestTXID = st.Newest
		}
	}
	if due, err := alarmDue(ctx, s, cell, idx); err != nil {
		fail(err)
	} else {
		c.AlarmDueMs = due
	}
	c.Findings = judge(c, rec, recErr, ltxFiles)
	if opts.Verify {
		fs, err := verifyFiles(ctx, s, ltxFiles)
		if err != nil {
			return fail(err)
		}
		c.Findings = append(c.Findings, fs...)
	}
	return c
}

// verifyFiles reads each LTX file whole, streamed, and checks it with the
// codec: a file that does not verify, or whose TXIDs are not the ones its
// key names, is a corrupt-file finding (a restore would stop at it). A
// failed read is an error, not a finding.
func verifyFiles(ctx context.Context, s store.Store, files []ltx.FileInfo) ([]Finding, error) {
	var fs []Finding
	for _, f := range files {
		if f.InBundle {
			continue
		}
		r, err := store.NewRangeReader(ctx, s, f.Key, 0, -1)
		if store.IsNotFound(err) {
			continue // compacted away since the listing
		}
		if err != nil {
			return nil, err
		}
		h, verr := ltx.VerifyFrom(r)
		rerr := r.Close()
		if verr == nil && (h.MinTXID != f.MinTXID || h.MaxTXID != f.MaxTXID) {
			verr = fmt.Errorf("its header holds TXIDs %d-%d, its key names %d-%d", h.MinTXID, h.MaxTXID, f.MinTXID, f.MaxTXID)
		}
		if verr != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			fs = append(fs, Finding{Kind: FindCorruptFile, Err: verr, Message: fmt.Sprintf(
				"%s: %v; a restore stops at it: put the file back from a copy of the bucket", f.Key, verr)})
			continue
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	return fs, nil
}

// logAcc sums up one log of a cell while its objects are listed.
type logAcc struct {
	l      layout.Log
	prefix string
	st     LogStat
	epochs map[uint64]*EpochStat
}

// readLogs lists the cell's prefix once (every page) and sums up each of
// its logs; it also returns the LTX log's files, for the chain checks. One
// listing serves every log: a cell costs one LIST (per 1000 objects), not
// one per mode.
func readLogs(ctx context.Context, s store.Store, opts Options, cell string, detail bool) ([]LogStat, []ltx.FileInfo, error) {
	var accs []*logAcc
	for _, l := range opts.logs() {
		accs = append(accs, &logAcc{l: l, prefix: l.Prefix(cell), st: LogStat{Mode: l.Name}, epochs: map[uint64]*EpochStat{}})
	}
	var files []ltx.FileInfo
	err := store.ListEach(ctx, s, store.ListOptions{Prefix: layout.CellPrefix(cell), Limit: opts.PageSize}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			for _, a := range accs {
				if !strings.HasPrefix(o.Key, a.prefix) {
					continue
				}
				a.st.Objects++
				a.st.Bytes += o.Size
				epoch, ok := a.l.EpochOfKey(cell, o.Key)
				if !ok {
					break // retired.json and other non-epoch objects
				}
				lo, hi, ok := position(a.l, cell, epoch, o.Key)
				if ok && a.l.Name == layout.LTX().Name {
					f, _ := ltx.ParseKey(o.Key)
					f.Size, f.Modified = o.Size, o.Modified
					files = append(files, f)
				}
				e := a.epochs[epoch]
				if e == nil {
					e = &EpochStat{Epoch: epoch}
					a.epochs[epoch] = e
				}
				e.Objects++
				e.Bytes += o.Size
				if ok {
					if e.First == 0 || lo < e.First {
						e.First = lo
					}
					e.Newest = max(e.Newest, hi)
				}
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var stats []LogStat
	for _, a := range accs {
		st := a.st
		for epoch, e := range a.epochs {
			if epoch >= st.NewestEpoch {
				st.NewestEpoch, st.Newest = epoch, e.Newest
			}
			if detail {
				st.Epochs = append(st.Epochs, *e)
			}
		}
		sort.Slice(st.Epochs, func(i, j int) bool { return st.Epochs[i].Epoch < st.Epochs[j].Epoch })
		stats = append(stats, st)
	}
	return stats, files, nil
}

// position is the TXID or sequence range an object of a log covers.
func position(l layout.Log, cell string, epoch uint64, key string) (lo, hi uint64, ok bool) {
	switch l.Name {
	case layout.LTX().Name:
		f, ok := layout.ParseLTXKey(key)
		return f.MinTXID, f.MaxTXID, ok && f.Cell == cell
	case layout.Changeset().Name:
		f, ok := layout.ParseChangesetKey(cell, epoch, key)
		return f.MinSeq, f.MaxSeq, ok
	case layout.Backup().Name:
		f, ok := layout.ParseBackupKey(cell, key)
		return f.Seq, f.Seq, ok
	}
	return 0, 0, false
}

// alarmDue is the cell's alarm by the wake index: the newest installation
// that is not obsolete (its entry's due time), else the retirement
// certificate's due time. nil when the index holds no alarm for it.
func alarmDue(ctx context.Context, s store.Store, cell string, idx wakeIndex) (*int64, error) {
	var ret *wake.Retired
	if idx.retired[cell] {
		key := layout.WakeRetiredKey(cell)
		obj, err := s.Get(ctx, key)
		switch {
		case store.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			r, err := wake.DecodeRetired(key, obj.Data)
			if err != nil {
				return nil, err
			}
			ret = &r
		}
	}
	var newest *wake.EntryRef
	for i, ref := range idx.entries[cell] {
		if ret != nil && wake.Obsolete(ref.Identity, *ret) {
			continue
		}
		if newest == nil || ref.Identity.Compare(newest.Identity) > 0 {
			newest = &idx.entries[cell][i]
		}
	}
	if newest != nil && (ret == nil || newest.Identity.Compare(ret.Identity) > 0) {
		obj, err := s.Get(ctx, newest.Key())
		if store.IsNotFound(err) { // retired and deleted since the listing
			return retAt(ret), nil
		}
		if err != nil {
			return nil, err
		}
		e, err := wake.DecodeEntry(newest.Key(), obj.Data)
		if err != nil {
			return nil, err
		}
		due := e.DueMs
		return &due, nil
	}
	return retAt(ret), nil
}

func retAt(r *wake.Retired) *int64 {
	if r == nil || r.AtMs == nil {
		return nil
	}
	v := *r.AtMs
	return &v
}

// errorsAs is errors.As for a target type, as a value.
func errorsAs[T error](err error) (T, bool) {
	var t T
	ok := errors.As(err, &t)
	return t, ok
}
