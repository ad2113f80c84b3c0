package fs

import (
	"log/slog"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/spf13/afero"
)

// Option configures Open.
type Option func(*config)

type config struct {
	fsys       afero.Fs
	logger     *slog.Logger
	clock      clock.Clock
	tempExpiry time.Duration
	createRoot bool
	sidecars   bool
}

// DefaultTempExpiry is how old a file in the temporary directory must be
// before Open removes it as the debris of a crashed writer. It is far longer
// than any healthy write takes, so a slow writer in another process is not
// robbed of its file.
const DefaultTempExpiry = time.Hour

// WithFs replaces the file system the store reads and writes. Names given
// to fsys are '/'-separated and relative to the bucket root, so fsys must
// already be rooted there (for example a fault-injecting wrapper around
// another afero.Fs in a test).
//
// The store still needs two things afero cannot express: files whose Stat
// reports inode numbers (a *syscall.Stat_t in Sys), without which Open
// fails, and lock files that expose a descriptor for flock(2) (an Fd
// method, as *os.File has, or afero's BasePathFile around one), without
// which writes fail. An injected fsys is trusted to keep paths inside the
// root: only the default file system refuses symbolic links.
func WithFs(fsys afero.Fs) Option { return func(c *config) { c.fsys = fsys } }

// WithLogger sets where the store reports what it repaired or ignored
// (stale temporary files, unreadable sidecar records). The default is
// slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithClock sets the clock used to age temporary files.
func WithClock(c clock.Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithTempExpiry sets how old a temporary file must be before Open removes
// it (see DefaultTempExpiry). Zero or a negative value disables the sweep.
func WithTempExpiry(d time.Duration) Option { return func(c *config) { c.tempExpiry = d } }

// WithCreateRoot makes Open create the root directory (and its parents) when
// it does not exist. Without it a missing root is an error, which catches a
// mistyped path early.
func WithCreateRoot() Option { return func(c *config) { c.createRoot = true } }

// WithSidecarRecords makes Put record versions and metadata in sidecar
// files (four fsyncs per Put) instead of in the object file's extended
// attribute (two), as versions of this package before the attribute did.
// Use it while a directory is still shared with processes running such a
// version, or one before the compact attribute record: they read only
// sidecars (or only JSON attributes), and would see objects written with
// the attribute as foreign. Objects written either way are read either way.
func WithSidecarRecords() Option { return func(c *config) { c.sidecars = true } }
