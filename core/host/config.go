package host

import (
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
)

// Ownership says who grants a cell's writer.
type Ownership int

const (
	// NoOwnership grants every cell at once (lease.None): one process, no
	// protection against a second one on the same files.
	NoOwnership Ownership = iota
	// SingleHost takes cells by shard locks under DataDir/shards, so
	// processes sharing DataDir never write one database, and routes calls
	// for a shard another process holds to it over a local socket
	// (docs/single-host.md).
	SingleHost
	// Fleet joins a fleet on Bucket: cells are taken by celld's ownership
	// protocol and the bucket wins over local files (docs/fleet.md).
	Fleet
)

func (o Ownership) String() string {
	switch o {
	case NoOwnership:
		return "none"
	case SingleHost:
		return "single host"
	case Fleet:
		return "fleet"
	}
	return "unknown"
}

// Config is everything a Host is built from: values, not flag strings.
type Config struct {
	// Driver opens cell databases. Required.
	Driver driver.Driver
	// DataDir holds the local files: cell databases (DataDir/cells, or
	// DataDir/nodes/<node> in a fleet) and shard locks (DataDir/shards).
	// Required.
	DataDir string
	// Bucket is where the durability mode writes and, in a fleet, the
	// fleet's bucket. The host does not close it. Required unless Mode is
	// the zero Mode and Ownership is not Fleet.
	Bucket store.Store
	// Mode is the durability mode (for example ltxlog.Mode()); its log is
	// opened on Bucket. The zero Mode keeps commits local
	// (durability.Local).
	Mode durability.Mode
	// Retention is how long the mode's log keeps every durable state
	// restorable (durability.OpenOptions.Retention; zero: the log's
	// default, 30 days for the LTX log; negative: none).
	Retention time.Duration
	// Ownership picks the writer protocol; see Ownership.
	Ownership Ownership
	// Fleet configures Fleet ownership; ignored otherwise.
	Fleet FleetConfig
	// SingleHost configures SingleHost ownership; ignored otherwise.
	SingleHost SingleHostConfig
	// Classes registers the node's classes and their HTTP routes. It runs
	// once the runtime exists and before anything is served or woken.
	Classes func(*Setup) error
	// R2 declares R2 bindings: binding name -> bucket_name, whose objects
	// live under r2/<bucket_name>/ in Bucket (required with R2). See
	// Setup.R2 and Host.R2 (r2.go).
	R2 map[string]string

	// Listener, if set, is served with Handler; Close shuts it down
	// first, letting calls in flight finish. Embedders that mount
	// Handler on a server of their own shut that down before Close.
	Listener net.Listener

	// Limits bound the requests of every server the host starts (public,
	// peer, local socket): header, read and idle timeouts, header and body
	// sizes. Zero fields take DefaultLimits'.
	Limits Limits

	// ScriptName keys IDFromName (celld's script_name).
	ScriptName string
	// IdleTimeout, IdleConnTimeout, MaxOpenCells and AlarmResidency are
	// cell.Options'. An idle object with open WebSockets is evicted too
	// (it hibernates; docs/websockets.md) unless its alarm keeps it.
	IdleTimeout     time.Duration
	IdleConnTimeout time.Duration
	MaxOpenCells    int
	AlarmResidency  time.Duration

	// MeterProvider receives the node's metrics (docs/metrics.md): the
	// runtime's, the fleet's, the wake service's, and every request to
	// Bucket (the host wraps it once; see metrics.InstrumentStore). It is
	// the OpenTelemetry metrics API only: the embedder picks the SDK and
	// the exporter. Nil records nothing.
	MeterProvider metric.MeterProvider

	// Logger receives the host's logs. Default: slog.Default().
	Logger *slog.Logger
	// Clock drives the runtime, the fleet, the wake service, the peer
	// protocol's timestamps, Route's pauses between looks at a cell's
	// owner and the peer port's quiet wait at Close. Default: the real
	// clock.
	Clock clock.Clock
}

// FleetConfig is a fleet node's membership.
type FleetConfig struct {
	// Node is this node's id; by default node_<32 lowercase hex>.
	Node string
	// TTL is the node lease's life (default fleet.DefaultTTL).
	TTL time.Duration
	// PeerListener, if set, serves the authenticated peer protocol
	// (PeerHandler); calls for cells another live node owns are then
	// forwarded to it. The host closes it last, once every record is
	// released.
	PeerListener net.Listener
	// Advertise is the peer address other nodes reach this one at
	// (default: PeerListener's address).
	Advertise string
	// WakeTick and WakePoll are the wake service's Tick and PollInterval
	// (defaults wake.DefaultTick, wake.DefaultPollInterval).
	WakeTick, WakePoll time.Duration
	// PerCellLog turns the node log off: with the LTX mode, every cell
	// then uploads its own level-0 files and re-reads its ownership record
	// before each reply, as before the node log (docs/durability.md). By
	// default a fleet node on the LTX mode writes every cell's commits
	// through one node log (core/nodelog): one bundle PUT and one read of
	// the node record per flush, for all its cells. Other modes always
	// write per cell.
	PerCellLog bool
	// NodeLog tunes the node log (zero fields: its defaults); Store,
	// Node, Generation, Confirmer, Clock, Logger and MeterProvider are
	// the host's.
	NodeLog nodelog.Options
	// SweepInterval is fleet.Options.SweepInterval: how often the node
	// recovers dead nodes' open logs and deletes recovered sessions'
	// bundles (default 30 s).
	SweepInterval time.Duration
}

// SingleHostConfig is a single host process's node log.
type SingleHostConfig struct {
	// PerCellLog turns the node log off: with the LTX mode, every cell
	// then uploads its own level-0 files (one object per group commit)
	// and compacts them in its own prefix. By default a single host
	// process on the LTX mode writes every cell's commits through one
	// node log of its own (one bundle per flush), fenced by a lock file
	// under DataDir/shards/nodelog; processes sharing DataDir fold the
	// logs of those that died (docs/durability.md, "The node log on a
	// single host"). Other modes always write per cell.
	PerCellLog bool
	// NodeLog tunes the node log (zero fields: its defaults); Store,
	// Node, Generation, Confirmer, Clock, Logger and MeterProvider are
	// the host's.
	NodeLog nodelog.Options
}

// Setup is what Config.Classes gets: the runtime to register classes on
// and the mux to add their routes to. The host routes every class's
// requests and Fetches to their cell's owner; handlers need no hook.
type Setup struct {
	Runtime *cell.Runtime
	// Mux serves Handler (and, behind authentication, PeerHandler). Serve
	// it through Handler, not directly: Handler routes each request to
	// its cell's owner.
	Mux *http.ServeMux
	// Node names this node in answers: the fleet node id, or "local".
	Node string
	// Route runs a call here or at its cell's owner; see Host.Route.
	//
	// Deprecated: the host routes every request it serves; a handler may
	// call the cell directly. Route is kept for handlers written for it.
	Route func(w http.ResponseWriter, r *http.Request, body []byte, call func() error) (answered bool, err error)

	host *Host // for R2 (r2.go)
}
