package cell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/metric"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/wakeport"
)

// DefaultIdleTimeout is how long an object stays in memory with no event
// in flight before it is evicted, when Options.IdleTimeout is zero.
const DefaultIdleTimeout = 70 * time.Second

// DefaultIdleConnTimeout is how long an open object keeps its database
// connection with no event in flight, when Options.IdleConnTimeout is
// zero.
const DefaultIdleConnTimeout = 10 * time.Second

// Options are a Runtime's ports and settings.
type Options struct {
	// ScriptName is the deployment name celld calls script_name. It keys
	// IDFromName, so a CellB runtime and a celld node agree on ids only when
	// they use the same name.
	ScriptName string
	// Driver opens cell databases. Required.
	Driver driver.Driver
	// DataDir holds one SQLite file per cell (see DatabasePath). Required.
	DataDir string
	// Lease grants write ownership per cell. Default: lease.None{}.
	Lease lease.Lease
	// Log makes commits durable. Default: durability.Local{} (the local
	// commit is durable).
	Log durability.Log
	// Clock drives alarms and idle eviction. Default: the real clock.
	Clock clock.Clock
	// Logger receives the runtime's logs. Default: slog.Default().
	Logger *slog.Logger
	// IdleTimeout evicts an object after this long with no event in
	// flight. Zero means DefaultIdleTimeout; negative means never.
	IdleTimeout time.Duration
	// IdleConnTimeout closes the database connection of an object that
	// has had no event in flight for this long, and keeps the object open
	// (like a Durable Object's hibernation): its state, its grant, its
	// log, its alarm and its place among the open cells stay; the
	// connection's memory (a wasm instance, the page cache) and file
	// descriptors go. The next event that uses storage reopens the
	// connection on the same file, without a restore: the cost of opening
	// an existing cell. A connection is kept while a transaction is open
	// or a commit is not yet durable, and when the cell's log is neither
	// durability.Local nor a durability.Rebinder. Zero means
	// DefaultIdleConnTimeout; negative means never.
	IdleConnTimeout time.Duration
	// MaxOpenCells caps the cells kept in memory, each with its database
	// open (up to three file descriptors in WAL mode): an activation that
	// takes the count past it evicts the longest-idle cells, as idle
	// eviction would. Cells with an event in flight are never evicted, so
	// the cap is soft under a burst. Zero means DefaultMaxOpenCells();
	// negative means no cap.
	MaxOpenCells int
	// AlarmResidency keeps an idle object in memory while its alarm is
	// due within this long, as celld's CELLD_ALARM_RESIDENT_MS does (the
	// open-cell cap can still evict it). Zero means DefaultAlarmResidency;
	// negative means idle objects are evicted whatever their alarm.
	AlarmResidency time.Duration
	// BlockConcurrencyTimeout bounds State.BlockConcurrencyWhile: a
	// callback still running after this long resets the object (as
	// Cloudflare does after 30 s), so a hung initializer cannot wedge the
	// cell. Zero means DefaultBlockConcurrencyTimeout; negative means no
	// limit.
	BlockConcurrencyTimeout time.Duration
	// Limits caps what each cell stores and runs (value and row size,
	// statement size, bound parameters, columns, database size); the zero
	// value is Durable Objects' limits. See Limits.
	Limits Limits
	// Wake publishes every committed alarm change to a fleet's wake index
	// (the contract is core/wakeport's); replies wait for the publication
	// as they wait for durability. Nil (a single host) publishes nothing
	// and costs nothing.
	Wake wakeport.Publisher
	// Router routes calls (Call, Stub.Fetch) whose cell another node or
	// process owns to that owner; see Router. Nil runs every call here.
	Router Router
	// MeterProvider receives the runtime's metrics (core/metrics: turns,
	// commits, durable waits, activations, open and evicted cells). Nil
	// records nothing.
	MeterProvider metric.MeterProvider
	// BootID names the machine's current boot (read once, by New): a
	// single-host cell (a lease with epochs whose bucket does not win)
	// on a log that acknowledges from the bucket (durability.BucketAcker)
	// then leaves its local file unsynced per commit and marks it with
	// the boot instead, so that after a machine restart the cell is
	// rebuilt from the bucket (unsynced.go). Nil: the operating system's
	// (Linux's /proc/sys/kernel/random/boot_id); an error (other systems)
	// keeps the local file synced once per group commit. Tests inject one
	// to simulate a restart.
	BootID func() (string, error)
}

// DefaultAlarmResidency is celld's default CELLD_ALARM_RESIDENT_MS.
const DefaultAlarmResidency = time.Hour

// DefaultBlockConcurrencyTimeout is how long a BlockConcurrencyWhile
// callback may run before the object is reset, when
// Options.BlockConcurrencyTimeout is zero (Cloudflare's limit).
const DefaultBlockConcurrencyTimeout = 30 * time.Second

// Runtime hosts cells. It is safe for concurrent use.
type Runtime struct {
	opts     Options
	clk      clock.Clock
	lease    lease.Lease
	log      durability.Log
	logger   *slog.Logger
	idle     time.Duration
	connIdle time.Duration // see Options.IdleConnTimeout (< 0: never)
	maxOpen  int           // < 0: no cap
	shedding atomic.Bool
	// residency: see Options.AlarmResidency (< 0: off).
	residency time.Duration
	// bcwLimit: see Options.BlockConcurrencyTimeout (< 0: no limit).
	bcwLimit time.Duration
	alarms   *alarmScheduler
	// pages is the buffer pool every capturing connection copies its
	// commits' pages into and every log hands them back to, shared so a
	// cell that commits rarely reuses buffers another cell released.
	pages driver.PagePool
	// restoreMarkMu serializes restore marks' writes and removals
	// (restorenext.go).
	restoreMarkMu sync.Mutex
	// boot is Options.BootID's answer ("" when it failed: the local file
	// of a single-host cell is synced once per group commit).
	boot string

	// bg is the context of work the runtime starts on its own (activation,
	// alarms, eviction); Close cancels it last.
	bg       context.Context
	cancelBg context.CancelFunc

	mu       sync.Mutex
	closing  bool
	classes  map[string]*class
	cells    map[string]*instance // live instances by cell key
	retiring map[string]*instance // instances shutting down, by cell key
	forking  map[string]bool      // cells a fork is writing (fork.go)

	// sockets are the WebSockets the objects accepted, by cell key: they
	// outlive instances (sockets.go).
	sockets socketRegistry

	metrics     *metrics.Cell // nil: no MeterProvider
	stopMetrics func() error
}

// New makes a Runtime from its ports.
func New(opts Options) (*Runtime, error) {
	if opts.Driver == nil {
		return nil, errors.New("cell: Options.Driver is required")
	}
	if opts.DataDir == "" {
		return nil, errors.New("cell: Options.DataDir is required")
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("cell: data directory: %w", err)
	}
	rt := &Runtime{
		opts:     opts,
		clk:      clock.Or(opts.Clock),
		lease:    opts.Lease,
		log:      opts.Log,
		logger:   opts.Logger,
		idle:     opts.IdleTimeout,
		classes:  map[string]*class{},
		cells:    map[string]*instance{},
		retiring: map[string]*instance{},
	}
	if rt.lease == nil {
		rt.lease = lease.None{}
	}
	if rt.log == nil {
		rt.log = durability.Local{}
	}
	if rt.logger == nil {
		rt.logger = slog.Default()
	}
	if rt.idle == 0 {
		rt.idle = DefaultIdleTimeout
	}
	rt.connIdle = opts.IdleConnTimeout
	if rt.connIdle == 0 {
		rt.connIdle = DefaultIdleConnTimeout
	}
	rt.residency = opts.AlarmResidency
	if rt.residency == 0 {
		rt.residency = DefaultAlarmResidency
	}
	rt.bcwLimit = opts.BlockConcurrencyTimeout
	if rt.bcwLimit == 0 {
		rt.bcwLimit = DefaultBlockConcurrencyTimeout
	}
	rt.maxOpen = opts.MaxOpenCells
	if rt.maxOpen == 0 {
		rt.maxOpen = DefaultMaxOpenCells()
	}
	rt.boot = readBootID(opts.BootID, rt.logger)
	rt.bg, rt.cancelBg = context.WithCancel(context.Background())
	rt.alarms = newAlarmScheduler(rt)
	if err := rt.initMetrics(); err != nil {
		return nil, fmt.Errorf("cell: metrics: %w", err)
	}
	return rt, nil
}

// DataDir is Options.DataDir.
func (rt *Runtime) DataDir() string { return rt.opts.DataDir }

// ScriptName is Options.ScriptName.
func (rt *Runtime) ScriptName() string { return rt.opts.ScriptName }

// instanceFor returns the live instance of a cell, activating one if there
// is none.
func (rt *Runtime) instanceFor(cls *class, id ID) (*instance, error) {
	key := CellKey(cls.name, id)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closing {
		return nil, ErrClosed
	}
	if inst := rt.cells[key]; inst != nil {
		return inst, nil
	}
	if rt.forking[key] {
		return nil, ErrForking
	}
	inst := newInstance(rt, cls, id, rt.retiring[key])
	rt.cells[key] = inst
	go inst.activate()
	if rt.maxOpen > 0 && len(rt.cells) > rt.maxOpen && rt.shedding.CompareAndSwap(false, true) {
		go rt.shed()
	}
	return inst, nil
}

// shed evicts the longest-idle cells until the open cells are back under
// MaxOpenCells, or only busy ones are left. One runs at a time (shedding),
// so a burst of activations does not evict more than it must.
func (rt *Runtime) shed() {
	defer rt.shedding.Store(false)
	type candidate struct {
		inst  *instance
		since time.Time
	}
	for {
		rt.mu.Lock()
		over := len(rt.cells) - rt.maxOpen
		var idle []candidate
		if over > 0 {
			for _, inst := range rt.cells {
				if since, ok := inst.g.idle(); ok {
					idle = append(idle, candidate{inst, since})
				}
			}
		}
		rt.mu.Unlock()
		if over <= 0 {
			return
		}
		sort.Slice(idle, func(i, j int) bool { return idle[i].since.Before(idle[j].since) })
		evicted := 0
		for _, c := range idle {
			if evicted == over {
				break
			}
			if c.inst.evictIfIdle() {
				rt.metrics.Evicted(rt.bg, c.inst.cls.name, metrics.EvictMaxOpen)
				evicted++
			}
		}
		if evicted == 0 {
			rt.logger.Debug("cell: more cells open than MaxOpenCells; the rest are busy", "over", over, "max", rt.maxOpen)
			return
		}
	}
}

// forget removes a failing instance from the live map; it stays known as
// retiring until its resources are released, so its successor waits.
func (rt *Runtime) forget(inst *instance) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.cells[inst.key] == inst {
		delete(rt.cells, inst.key)
	}
	select {
	case <-inst.done:
		return // already shut down: nothing for a successor to wait for
	default:
	}
	rt.retiring[inst.key] = inst
}

// retired drops a fully shut-down instance.
func (rt *Runtime) retired(inst *instance) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.retiring[inst.key] == inst {
		delete(rt.retiring, inst.key)
	}
	if rt.cells[inst.key] == inst {
		delete(rt.cells, inst.key)
	}
}

// ActiveCells lists the cell keys with an instance in memory, sorted.
func (rt *Runtime) ActiveCells() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	keys := make([]string, 0, len(rt.cells))
	for k := range rt.cells {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Queued is the number of events waiting for the input gate of the cell
// with key (0 when it is not in memory): a measure of contention.
func (rt *Runtime) Queued(key string) int {
	rt.mu.Lock()
	inst := rt.cells[key]
	rt.mu.Unlock()
	if inst == nil {
		return 0
	}
	return inst.g.queued()
}

// errRetired fails events that reached an instance just as it was retired
// (evicted or closed); they retry on a fresh instance.
var errRetired = errors.New("cell: instance retired")

// dispatch runs fn as one event of the cell (cls, id), yielding the
// calling handler (if ctx belongs to one) for the duration of the call.
func (rt *Runtime) dispatch(ctx context.Context, cls *class, id ID, fn func(ctx context.Context, obj any) error) error {
	err := yield(ctx, func(ctx context.Context) error {
		for {
			inst, err := rt.instanceFor(cls, id)
			if err != nil {
				return err
			}
			err = inst.run(ctx, fn)
			if errors.Is(err, errRetired) {
				if err := ctx.Err(); err != nil {
					return err
				}
				continue
			}
			return err
		}
	})
	rt.countTurn(ctx, cls.name, err)
	return err
}

// Close stops the runtime: new calls fail with ErrClosed, events in flight
// (including yielded ones) run to completion and their replies wait for
// durability, then every cell's log is closed, its database closed and its
// grant released. If ctx ends first, the remaining cells are dropped as
// EvictAll would and ctx's error is returned.
func (rt *Runtime) Close(ctx context.Context) error {
	rt.mu.Lock()
	if rt.closing {
		rt.mu.Unlock()
		return nil
	}
	rt.closing = true
	rt.mu.Unlock()
	defer rt.stopMetrics()
	// The owner is going away: its sockets close first, with 1012.
	rt.sockets.closeAll(websocket.StatusServiceRestart, "the cell's owner is going away")
	rt.alarms.stopAll()

	var errs []error
	for {
		rt.mu.Lock()
		var live []*instance
		for _, inst := range rt.cells {
			live = append(live, inst)
		}
		for _, inst := range rt.retiring {
			live = append(live, inst)
		}
		rt.mu.Unlock()
		if len(live) == 0 {
			break
		}
		for _, inst := range live {
			mine, err := inst.g.waitQuiet(ctx, ErrClosed)
			if err != nil {
				rt.EvictAll()
				rt.cancelBg()
				return err
			}
			if mine {
				if err := inst.shutdown(ctx, true); err != nil {
					errs = append(errs, err)
				}
			} else {
				select {
				case <-inst.done:
				case <-ctx.Done():
					rt.EvictAll()
					rt.cancelBg()
					return ctx.Err()
				}
			}
		}
	}
	rt.cancelBg()
	return errors.Join(errs...)
}

// EvictAll drops every instance at once, without waiting for events in
// flight or for durability: it models a crash, for tests. Uncommitted
// transactions are rolled back, queued and in-flight callers get a
// BrokenObjectError, logs are closed with final=false, and the next call
// to each cell builds a fresh instance from what its database and log
// hold. Alarm timers keep running.
func (rt *Runtime) EvictAll() {
	rt.mu.Lock()
	var live []*instance
	for _, inst := range rt.cells {
		live = append(live, inst)
	}
	rt.mu.Unlock()
	for _, inst := range live {
		inst.breakNow("the runtime evicted every object (EvictAll)", nil)
	}
}
