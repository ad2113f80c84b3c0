package leasetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/page"
	"github.com/cellb/cellb/core/store"
)

// NodeLogs is an optional Harness capability of lease domains whose
// participants keep a node log (core/nodelog) in the bucket they share:
// every cell's commits in one bundle per flush, credited only once a read
// of the participant's record shows its log still open, and recovered
// (folded into the cells' prefixes, then sealed) by whoever takes a cell
// of a participant that died with its log open. The suite builds each
// participant's node log from its Session and checks that no credited
// row is lost to a crash, and that a bundle stored after another
// participant sealed the log is never credited. A harness without this
// capability skips those cases.
type NodeLogs interface {
	// Bucket is the bucket the participants share.
	Bucket() store.Store
	// Session is n's node-log session: its node id, its generation, and
	// what proves the log current (for a fleet node, the node itself).
	Session(n Node) (node, generation string, c nodelog.Confirmer, err error)
}

// openNodeLog builds n's node log on s.
func openNodeLog(t tb, h NodeLogs, n Node, s store.Store) *nodelog.Log {
	t.Helper()
	node, gen, c, err := h.Session(n)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("harness keeps no node log")
		return nil
	}
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	l, err := nodelog.New(nodelog.Options{Store: s, Node: node, Generation: gen, Confirmer: c,
		RetryDelay: time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("nodelog.New: %v", err)
	}
	return l
}

// nodeLogRow is a one-page LTX file of txid: what a cell's commit is in a
// bundle.
func nodeLogRow(t tb, cell string, epoch uint64, txid ltx.TXID) nodelog.Row {
	pg := make([]byte, 512)
	copy(pg[100:], fmt.Sprintf("%s %d %d", cell, epoch, txid))
	data, err := ltx.Encode(ltx.Header{PageSize: 512, Commit: 1, MinTXID: txid, MaxTXID: txid, Timestamp: time.Now().UnixMilli()}, []page.Page{{Pgno: 1, Data: pg}})
	if err != nil {
		t.Fatalf("encode a row: %v", err)
	}
	return nodelog.Row{Cell: cell, CellEpoch: epoch, TXID: txid, Data: data}
}

var nodeLogCases = []testCase{
	{"NodeLogSurvivesACrash", func(t tb, ctx context.Context, h Harness) {
		// Rows a node log credited are in the cell's prefix once another
		// node took the cell of their owner, which crashed before it
		// tiered them: the taker recovered the dead owner's log first.
		nh, ok := h.(NodeLogs)
		if !ok {
			t.Skipf("harness keeps no node log")
			return
		}
		a, b := newNode(t, ctx, h), newNode(t, ctx, h)
		defer b.Close(ctx)
		cell := freshCell()
		ga := acquire(t, ctx, a, cell)
		l := openNodeLog(t, nh, a, nh.Bucket())
		// TXID 1 too: a cell's first row (a node log writes its snapshot
		// to the prefix directly; here the log carries it) — recovery folds
		// rows only onto a chain without a gap.
		for txid := ltx.TXID(1); txid <= 4; txid++ {
			if err := l.Submit(ctx, []nodelog.Row{nodeLogRow(t, cell, ga.Epoch(), txid)}); err != nil {
				t.Fatalf("Submit TXID %d: %v", txid, err)
			}
		}
		a.Crash()
		l.Close(ctx, false)
		if h.TTL() > 0 {
			h.Advance(h.TTL() + h.TTL()/2)
		}
		gb, err := b.TryAcquire(ctx, cell)
		if err != nil {
			t.Fatalf("the crashed node's cell could not be taken: %v", err)
		}
		covered, err := nodelog.Covered(ctx, nh.Bucket(), cell, ga.Epoch())
		if err != nil {
			t.Fatalf("list the cell's prefix: %v", err)
		}
		if covered < 4 {
			t.Fatalf("epoch %d was granted over a crashed owner whose node log credited TXIDs 1-4 of epoch %d, but the cell's prefix holds TXIDs up to %d only: credited rows are lost",
				gb.Epoch(), ga.Epoch(), covered)
		}
	}},
	{"NodeLogSealRacesAFlush", func(t tb, ctx context.Context, h Harness) {
		// A bundle whose PUT was on its way when the node paused, and that
		// lands after another node took the node's cell (fencing and
		// sealing its log), must not be credited: its row was not folded.
		nh, ok := h.(NodeLogs)
		if !ok {
			t.Skipf("harness keeps no node log")
			return
		}
		a, b := newNode(t, ctx, h), newNode(t, ctx, h)
		defer a.Close(ctx)
		defer b.Close(ctx)
		cell := freshCell()
		ga := acquire(t, ctx, a, cell)
		gate := &heldBundles{Store: nh.Bucket(), held: make(chan struct{}), release: make(chan struct{})}
		l := openNodeLog(t, nh, a, gate)
		defer l.Close(ctx, false)
		credited := make(chan error, 1)
		go func() { credited <- l.Submit(ctx, []nodelog.Row{nodeLogRow(t, cell, ga.Epoch(), 2)}) }()
		select {
		case <-gate.held:
		case <-time.After(30 * time.Second):
			t.Fatalf("the node log stored no bundle")
		}
		if err := a.Pause(true); errors.Is(err, ErrUnsupported) {
			close(gate.release)
			t.Skipf("harness cannot pause a node")
			return
		} else if err != nil {
			close(gate.release)
			t.Fatalf("Pause: %v", err)
		}
		h.Advance(h.TTL() + h.TTL()/2)
		_, err := b.TryAcquire(ctx, cell)
		close(gate.release) // the bundle lands now, after the seal
		if perr := a.Pause(false); perr != nil {
			t.Fatalf("resume: %v", perr)
		}
		if err != nil {
			t.Fatalf("the paused node's cell could not be taken after its TTL: %v", err)
		}
		select {
		case err := <-credited:
			if err == nil {
				covered, _ := nodelog.Covered(ctx, nh.Bucket(), cell, ga.Epoch())
				t.Fatalf("a bundle stored after another node recovered this node's log was credited (the cell's prefix holds TXIDs up to %d, not the credited TXID 2): an acknowledged commit is lost", covered)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("the flush never ended")
		}
	}},
}

// heldBundles holds the first bundle PUT until release is closed.
type heldBundles struct {
	store.Store
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func (h *heldBundles) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if strings.HasPrefix(key, layout.NodeLogPrefix) {
		first := false
		h.once.Do(func() { first = true })
		if first {
			close(h.held)
			<-h.release
		}
	}
	return h.Store.Put(ctx, key, data, opts)
}
