package leasetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
)

// The twins below wrap a working Harness and break one promise each. The
// package's own tests prove the suite rejects every one of them (RunTwins);
// a suite that passed a twin would be a broken suite.

// Twins are the suite's negative twins, each with the cases that must
// reject it on a harness with every capability (NewFleetHarness's: a TTL,
// Isolate, Pause, LogEpochs, NodeLogs). On a harness with fewer, some of
// those cases skip themselves or cannot tell (a lock the kernel drops at a
// crash is also dropped at a close): check such a harness against a list
// of its own, with suite.RunTwins.
func Twins() []suite.Twin[Harness] {
	return []suite.Twin[Harness]{
		{Name: "unexclusive", Flaw: "hands out a grant even when another node holds the cell", Wrap: Unexclusive,
			CaughtBy: []string{"Exclusive", "OneWinnerUnderContention"}},
		{Name: "static-epoch", Flaw: "reports the same epoch for every acquisition", Wrap: StaticEpoch,
			CaughtBy: []string{"EpochsGrow", "ReleaseHandsOver"}},
		{Name: "never-fences", Flaw: "keeps acknowledging writes whatever happens to the lease", Wrap: NeverFences,
			CaughtBy: []string{"SelfFence", "ReleaseHandsOver"}},
		{Name: "forgetful-release", Flaw: "reports success from Release and Close without releasing anything", Wrap: ForgetfulRelease,
			CaughtBy: []string{"ReleaseHandsOver", "CloseReleasesEverything"}},
		{Name: "crash-keeps-claims", Flaw: "a crashed participant goes on holding and renewing its cells", Wrap: CrashKeepsClaims,
			CaughtBy: []string{"CrashTakeover"}},
		{Name: "refusing-grants", Flaw: "hands out grants that refuse every write from the start", Wrap: RefusingGrants,
			CaughtBy: []string{"AcquireGrants"}},
		{Name: "log-blind-epochs", Flaw: "numbers a cell's epochs from its own grants, blind to the epochs its log holds", Wrap: LogBlindEpochs,
			CaughtBy: []string{"EpochsPassTheLog"}},
		{Name: "revives-after-pause", Flaw: "grants held before a pause accept writes again once the node resumes", Wrap: RevivesAfterPause,
			CaughtBy: []string{"PausedPastTTLStaysFenced"}},
		{Name: "loses-bundles", Flaw: "the node log's bucket answers every bundle PUT with success and stores nothing", Wrap: LosesBundles,
			CaughtBy: []string{"NodeLogSurvivesACrash"}},
		{Name: "skips-credit-read", Flaw: "the node log credits every bundle without reading the node's record after its PUT", Wrap: SkipsCreditRead,
			CaughtBy: []string{"NodeLogSealRacesAFlush"}},
	}
}

// RunTwins shows the suite rejects every twin of Twins on h
// (suite.RunTwins): the cases the twins name must pass on h itself, then
// each must fail on every twin that names it. h must have every
// capability (see Twins); it is the caller's to close.
func RunTwins(t *testing.T, h Harness, opts ...suite.Option) {
	t.Helper()
	suite.RunTwins(t, h, Twins(), RunReport, opts...)
}

// Unexclusive hands out a grant even when another node holds the cell.
func Unexclusive(h Harness) Harness { return &twin{Harness: h, kind: twinUnexclusive} }

// StaticEpoch reports the same epoch for every acquisition.
func StaticEpoch(h Harness) Harness { return &twin{Harness: h, kind: twinStaticEpoch} }

// NeverFences keeps acknowledging writes whatever happens to the lease.
func NeverFences(h Harness) Harness { return &twin{Harness: h, kind: twinNeverFences} }

// ForgetfulRelease reports success from Release and Close without
// releasing anything.
func ForgetfulRelease(h Harness) Harness { return &twin{Harness: h, kind: twinForgetful} }

// CrashKeepsClaims ignores Crash: the "crashed" participant goes on
// holding (and renewing) its cells, as a process that hangs instead of
// dying would. Close on the harness stops such participants.
func CrashKeepsClaims(h Harness) Harness { return &twin{Harness: h, kind: twinCrashKeeps} }

// RevivesAfterPause lets the grants a node held before a pause accept
// writes again once the node resumes, as a node whose successful renewal
// undoes its self-fence would.
func RevivesAfterPause(h Harness) Harness { return &twin{Harness: h, kind: twinRevives} }

// RefusingGrants hands out grants that refuse every write from the start,
// like a lease whose fence deadline was computed in the past.
func RefusingGrants(h Harness) Harness { return &twin{Harness: h, kind: twinRefusing} }

// LogBlindEpochs numbers each cell's epochs from its own grants only, one
// more each time, blind to the epochs the cell's log already holds (as a
// lease that raises the record's epoch whatever the log says would).
func LogBlindEpochs(h Harness) Harness {
	return &twin{Harness: h, kind: twinLogBlind, blind: map[string]uint64{}}
}

// LosesBundles keeps a node log on a bucket that answers every bundle PUT
// with success and stores nothing: a log that loses its bundles.
func LosesBundles(h Harness) Harness { return &twin{Harness: h, kind: twinLosesBundles} }

// SkipsCreditRead credits every bundle without reading the node's record
// after its PUT: a node log blind to a seal that raced its flush.
func SkipsCreditRead(h Harness) Harness { return &twin{Harness: h, kind: twinSkipsCreditRead} }

type twinKind int

const (
	twinUnexclusive twinKind = iota
	twinStaticEpoch
	twinNeverFences
	twinForgetful
	twinCrashKeeps
	twinRefusing
	twinLogBlind
	twinRevives
	twinLosesBundles
	twinSkipsCreditRead
)

type twin struct {
	Harness
	kind twinKind

	mu      sync.Mutex
	zombies []Node            // crashed participants CrashKeepsClaims left running
	blind   map[string]uint64 // LogBlindEpochs: the last epoch granted per cell
}

// WriteLogEpoch passes the capability through, so that a twin is checked
// by the same cases as the harness it wraps.
func (t *twin) WriteLogEpoch(ctx context.Context, cell string, epoch uint64) error {
	if lw, ok := t.Harness.(LogEpochs); ok {
		return lw.WriteLogEpoch(ctx, cell, epoch)
	}
	return ErrUnsupported
}

// Bucket passes the NodeLogs capability through; LosesBundles' bucket
// drops every bundle.
func (t *twin) Bucket() store.Store {
	nl, ok := t.Harness.(NodeLogs)
	if !ok {
		return nil
	}
	if t.kind == twinLosesBundles {
		return lossyBundles{nl.Bucket()}
	}
	return nl.Bucket()
}

// Session passes the NodeLogs capability through for the node the twin
// wraps; SkipsCreditRead's log credits without reading.
func (t *twin) Session(n Node) (string, string, nodelog.Confirmer, error) {
	nl, ok := t.Harness.(NodeLogs)
	if !ok {
		return "", "", nil, ErrUnsupported
	}
	if tn, ok := n.(*twinNode); ok {
		n = tn.Node
	}
	node, gen, c, err := nl.Session(n)
	if err == nil && t.kind == twinSkipsCreditRead {
		c = blindConfirmer{c}
	}
	return node, gen, c, err
}

// lossyBundles answers a bundle PUT with success and stores nothing.
type lossyBundles struct{ store.Store }

func (s lossyBundles) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if strings.HasPrefix(key, layout.NodeLogPrefix) {
		return "lost", nil
	}
	return s.Store.Put(ctx, key, data, opts)
}

// blindConfirmer proves every flush current without a read.
type blindConfirmer struct{ nodelog.Confirmer }

func (blindConfirmer) ConfirmLog(context.Context) error { return nil }

func (t *twin) NewNode(ctx context.Context) (Node, error) {
	n, err := t.Harness.NewNode(ctx)
	if err != nil {
		return nil, err
	}
	return &twinNode{Node: n, kind: t.kind, h: t}, nil
}

func (t *twin) Close() error {
	t.mu.Lock()
	zombies := t.zombies
	t.zombies = nil
	t.mu.Unlock()
	for _, n := range zombies {
		n.Crash()
	}
	return nil // the wrapped harness is the caller's
}

type twinNode struct {
	Node
	kind twinKind
	h    *twin

	mu      sync.Mutex
	resumed bool // resumed after a pause (RevivesAfterPause)
}

func (n *twinNode) Pause(on bool) error {
	err := n.Node.Pause(on)
	if !on && err == nil {
		n.mu.Lock()
		n.resumed = true
		n.mu.Unlock()
	}
	return err
}

func (n *twinNode) revived() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kind == twinRevives && n.resumed
}

func (n *twinNode) Crash() {
	if n.kind == twinCrashKeeps {
		n.h.mu.Lock()
		n.h.zombies = append(n.h.zombies, n.Node)
		n.h.mu.Unlock()
		return
	}
	n.Node.Crash()
}

var fakeEpoch atomic.Uint64

func (n *twinNode) TryAcquire(ctx context.Context, cell string) (lease.Grant, error) {
	g, err := n.Node.TryAcquire(ctx, cell)
	if err != nil {
		if n.kind == twinUnexclusive && errors.As(err, new(*lease.CellOwnedElsewhereError)) {
			return &fakeGrant{epoch: 1<<40 + fakeEpoch.Add(1), lost: make(chan struct{})}, nil
		}
		return nil, err
	}
	if n.kind == twinUnexclusive {
		return g, nil
	}
	tg := &twinGrant{Grant: g, kind: n.kind, node: n}
	if n.kind == twinLogBlind {
		n.h.mu.Lock()
		if last, ok := n.h.blind[cell]; ok {
			tg.epoch = last + 1
		} else {
			tg.epoch = g.Epoch()
		}
		n.h.blind[cell] = tg.epoch
		n.h.mu.Unlock()
	}
	return tg, nil
}

func (n *twinNode) Close(ctx context.Context) error {
	if n.kind == twinForgetful {
		n.Node.Crash()
		return nil
	}
	return n.Node.Close(ctx)
}

type twinGrant struct {
	lease.Grant
	kind  twinKind
	epoch uint64 // LogBlindEpochs' own numbering
	node  *twinNode
}

// RecordEpoch passes through to a grant that records its epoch lazily.
func (g *twinGrant) RecordEpoch(ctx context.Context) error {
	if r, ok := g.Grant.(lease.EpochRecorder); ok {
		return r.RecordEpoch(ctx)
	}
	return nil
}

func (g *twinGrant) Epoch() uint64 {
	switch g.kind {
	case twinStaticEpoch:
		return 1
	case twinLogBlind:
		return g.epoch
	}
	return g.Grant.Epoch()
}

func (g *twinGrant) CheckWrite() error {
	if g.kind == twinNeverFences || g.node.revived() {
		return nil
	}
	if g.kind == twinRefusing {
		return &lease.LeaseLapsedError{Cell: "refusing-grants twin"}
	}
	return g.Grant.CheckWrite()
}

func (g *twinGrant) Lost() <-chan struct{} {
	if g.kind == twinNeverFences || g.node.revived() {
		return make(chan struct{})
	}
	return g.Grant.Lost()
}

func (g *twinGrant) Release(ctx context.Context) error {
	if g.kind == twinForgetful {
		return nil
	}
	return g.Grant.Release(ctx)
}

// fakeGrant is a grant that nothing backs.
type fakeGrant struct {
	epoch uint64
	once  sync.Once
	lost  chan struct{}
}

func (g *fakeGrant) Epoch() uint64         { return g.epoch }
func (g *fakeGrant) BucketWins() bool      { return true }
func (g *fakeGrant) Lost() <-chan struct{} { return g.lost }
func (g *fakeGrant) Err() error            { return nil }
func (g *fakeGrant) CheckWrite() error     { return nil }
func (g *fakeGrant) Release(ctx context.Context) error {
	g.once.Do(func() { close(g.lost) })
	return nil
}
