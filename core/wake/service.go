package wake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/wakeport"
)

// DefaultPollInterval is how often a node scans the due entries of the
// wake index for cells it should wake (go-design §8: WakePollInterval).
const DefaultPollInterval = 30 * time.Second

// Options configure a Service.
type Options struct {
	// Store is the fleet's bucket. Required.
	Store store.Store
	// Node is this node's id (its lease is nodes/<Node>.json). Required.
	Node string
	// Clock drives polling and the waker role. Default: the real clock.
	Clock clock.Clock
	// Logger receives the service's logs. Default: slog.Default().
	Logger *slog.Logger
	// Tick is the waker role's period: the elected node scans for cells
	// nobody live owns and cleans obsolete entries once a tick; the role's
	// lease lasts 3 ticks. Zero means DefaultTick.
	Tick time.Duration
	// PollInterval is how often this node scans due entries for its own
	// cells. Zero means DefaultPollInterval.
	PollInterval time.Duration
	// Retries is how many times a failed entry write is retried before
	// the publication (and so the turn that set the alarm) fails. Zero
	// means 3.
	Retries int
	// RetryDelay is the wait before the first retry, doubled after each.
	// Zero means 100 ms.
	RetryDelay time.Duration
	// MeterProvider receives the service's metrics (wake polls; see
	// core/metrics). Nil records nothing.
	MeterProvider metric.MeterProvider
}

// Service keeps a fleet node's part of the wake index: it publishes the
// alarms of the cells this node owns (wakeport.Publisher), retires the
// entries they replace, and wakes cells whose alarms are due — its own
// always, and, while it holds the waker role, cells nobody live owns.
//
// A wake entry is only a hint: waking a cell activates it, and the
// cell's own _cf_ALARM row decides whether anything runs.
type Service struct {
	opts Options
	clk  clock.Clock
	log  *slog.Logger

	mu sync.Mutex
	// published are the entries this node wrote, per cell, not yet known
	// to be obsolete: deleted as soon as a newer retirement covers them.
	published map[string][]written
	elected   bool

	inflight sync.WaitGroup
	stop     context.CancelFunc
	done     chan struct{}

	metrics *metrics.Wake // nil: none
}

var _ wakeport.Publisher = (*Service)(nil)

// New makes a Service that can publish; Run starts its polling.
func New(opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("wake: Options.Store is required")
	}
	if opts.Node == "" {
		return nil, errors.New("wake: Options.Node is required")
	}
	if opts.Tick <= 0 {
		opts.Tick = DefaultTick
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Retries <= 0 {
		opts.Retries = 3
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = 100 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m, err := metrics.NewWake(opts.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("wake: metrics: %w", err)
	}
	return &Service{
		opts: opts, clk: clock.Or(opts.Clock), metrics: m,
		log:       opts.Logger.With("component", "wake", "node", opts.Node),
		published: map[string][]written{},
	}, nil
}
