package host

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/shard"
)

// A single host's node log (docs/durability.md, "The node log on a single
// host"): with SingleHost ownership on the LTX mode, each process writes
// every cell's commits through one node log of its own, fenced by a lock
// file under DataDir/shards/nodelog (nodelog.LocalSession). The logs of
// processes that died are folded into the cells' prefixes before this
// process serves any cell, and again whenever it takes over a shard another
// process let go (before any grant of that shard), since that shard's cells
// may have rows only the dead process's log holds.

// localLog is a single-host process's node log session and its recovery
// of the dead processes' logs. A process on the LTX mode with PerCellLog
// has no session but recovers all the same: it may share DataDir with
// processes that run a node log, or follow one that did.
type localLog struct {
	session  *nodelog.LocalSession // nil with PerCellLog
	recovery nodelog.LocalRecovery
	// pending is set when a recovery failed: until one succeeds, every
	// grant waits for another try (recoveringLease).
	pending atomic.Bool
	mu      sync.Mutex // one recovery at a time in this process
}

// localLogDir is where a single host's node log sessions lock their files.
func localLogDir(dataDir string) string { return filepath.Join(dataDir, "shards", "nodelog") }

// openLocalLog folds every dead process's log (it fails when one cannot
// be folded: a cell could otherwise be served without rows it
// acknowledged), then, unless PerCellLog, starts this process's session
// and node log.
func (h *Host) openLocalLog(ctx context.Context) error {
	dir := localLogDir(h.cfg.DataDir)
	node, err := nodelog.LocalNodeID(dir)
	if err != nil {
		return fmt.Errorf("host: node log: %w", err)
	}
	foldMetrics, err := metrics.NewNodeLog(h.cfg.MeterProvider, nil)
	if err != nil {
		return fmt.Errorf("host: metrics: %w", err)
	}
	ll := &localLog{recovery: nodelog.LocalRecovery{
		Store: h.cfg.Bucket, Dir: dir, Node: node,
		Opts: nodelog.FoldOptions{Clock: h.cfg.Clock, Logger: h.log, Metrics: foldMetrics},
	}}
	if h.cfg.SingleHost.PerCellLog {
		if err := h.recoverLocalLogs(ctx, ll, true); err != nil {
			return err
		}
		h.localLog = ll
		return nil
	}
	// The session first: its lock file exists before the recovery looks,
	// and recovery never takes it for a dead one.
	session, err := nodelog.OpenLocalSession(dir, node)
	if err != nil {
		return fmt.Errorf("host: node log: %w", err)
	}
	ll.session, ll.recovery.Self = session, session.Generation()
	if err := h.recoverLocalLogs(ctx, ll, true); err != nil {
		session.Close(true)
		return err
	}
	no := h.cfg.SingleHost.NodeLog
	no.Store, no.Node, no.Generation, no.Confirmer = h.cfg.Bucket, node, session.Generation(), session
	no.Clock, no.Logger, no.MeterProvider = h.cfg.Clock, h.log, h.cfg.MeterProvider
	if h.nodeLog, err = nodelog.New(no); err != nil {
		session.Close(true)
		return err
	}
	h.localLog = ll
	return nil
}

// recoverLocalLogs folds the logs of dead processes sharing DataDir
// (nodelog.LocalRecovery); bucket also looks for sessions the bucket holds
// without a lock file. A failure leaves pending set.
func (h *Host) recoverLocalLogs(ctx context.Context, ll *localLog, bucket bool) error {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	recovered, err := ll.recovery.Recover(ctx, bucket)
	for _, r := range recovered {
		h.log.Warn("folded the node log of a process that ended without closing it", "session", r.Generation,
			"bundles", r.Bundles, "rows", r.Rows, "folded", r.Folded)
	}
	ll.pending.Store(err != nil)
	if err != nil {
		return fmt.Errorf("host: recovering the node logs of processes that died: %w", err)
	}
	return nil
}

// learn is the shard watch's LearnFunc with a single host's node log: on
// taking over a shard, the dead processes' logs are folded first, then
// the shard's alarms learned.
func (h *Host) learn(ctx context.Context, owns func(cellKey string) bool) {
	if h.localLog != nil {
		if err := h.recoverLocalLogs(ctx, h.localLog, false); err != nil {
			h.log.Error("a shard was taken over before the logs of the processes that died could be folded; its grants wait for another try", "err", err)
		}
	}
	h.rt.LearnAlarms(ctx, owns)
}

// recoveringLease is the shard lease with a single host's node log: a
// grant is handed out only once every dead process's log is folded. The
// shard watch folds on each takeover (learn); until it runs (while the
// host starts) and after a fold failed, each grant folds first.
type recoveringLease struct {
	*shard.Lease
	h        *Host
	watching atomic.Bool
}

func (l *recoveringLease) TryAcquire(ctx context.Context, cellKey string) (lease.Grant, error) {
	g, err := l.Lease.TryAcquire(ctx, cellKey)
	if err != nil {
		return nil, err
	}
	if ll := l.h.localLog; ll != nil && (!l.watching.Load() || ll.pending.Load()) {
		if err := l.h.recoverLocalLogs(ctx, ll, false); err != nil {
			g.Release(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return g, nil
}

// closeLocalLog ends the session once the node log closed: its lock file
// is removed when the log closed final without error and unfenced
// (nothing is left to fold), kept otherwise for the next recovery.
func (h *Host) closeLocalLog(logErr error) error {
	if h.localLog == nil || h.localLog.session == nil {
		return nil
	}
	return h.localLog.session.Close(logErr == nil)
}
