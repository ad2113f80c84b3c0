package nodelog

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// session is a node record in a store and the Confirmer over it: the
// fleet's side, reduced to what the node log relies on (the record's log
// must read open, at the session's generation, for a credit).
type session struct {
	s     store.Store
	node  string
	gen   string
	reads atomic.Int64
	// before runs before each read (a test holds or counts reads).
	before func()

	mu     sync.Mutex
	fenced chan struct{}
	why    string
}

func newSession(s store.Store, node string) *session {
	gen := hex.EncodeToString([]byte(strings.Repeat(node, 32)))[:64]
	ss := &session{s: s, node: node, gen: gen, fenced: make(chan struct{})}
	ss.write(layout.OpenNodeLog(1), 1<<62)
	return ss
}

func (ss *session) write(lg *layout.NodeLog, expires uint64) {
	l := layout.NodeLease{Node: ss.node, ExpiresMs: expires, OwnershipIndexGeneration: ss.gen, ProbePublicKey: ss.gen, Log: lg}
	if _, err := ss.s.Put(context.Background(), layout.NodeKey(ss.node), l.Encode(), store.PutOptions{}); err != nil {
		panic(err)
	}
}

func (ss *session) ConfirmLog(ctx context.Context) error {
	if ss.before != nil {
		ss.before()
	}
	ss.reads.Add(1)
	obj, err := ss.s.Get(ctx, layout.NodeKey(ss.node))
	if err != nil {
		return err
	}
	l, err := layout.DecodeNodeLease(layout.NodeKey(ss.node), obj.Data)
	if err != nil {
		return err
	}
	if l.OwnershipIndexGeneration != ss.gen || l.Log == nil || l.Log.State != layout.NodeLogOpen || l.Log.Epoch != 1 {
		ss.Fence("log closed")
		return errors.New("fenced: log closed")
	}
	return nil
}

func (ss *session) Fence(reason string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	select {
	case <-ss.fenced:
	default:
		ss.why = reason
		close(ss.fenced)
	}
}

func (ss *session) Fenced() <-chan struct{} { return ss.fenced }

func (ss *session) isFenced() bool {
	select {
	case <-ss.fenced:
		return true
	default:
		return false
	}
}
