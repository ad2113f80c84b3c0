package host

import (
	"context"
	"errors"
	"time"
)

// ShutdownTimeout bounds the Close that Run does once it stops serving.
const ShutdownTimeout = 30 * time.Second

// Run serves until ctx is done, a listener the host serves fails (Err) or
// the fleet node self-fences (Fenced), then closes the host in the
// shutdown order, allowing it ShutdownTimeout, and returns why it
// stopped:
//
//   - nil after ctx ended and a clean Close;
//   - the node's *fleet.FencedError after a self-fence (a fenced node never
//     serves again: its supervisor should start a new one), or, for a
//     single host process with a node log, an error matching
//     nodelog.ErrFenced;
//   - the listener's error after it failed;
//
// joined with what Close failed at, if anything. Each cause is logged on
// Config.Logger. A program maps the error to its exit status (cellb serve:
// nil 0, *fleet.FencedError or nodelog.ErrFenced 3, anything else 1).
func (h *Host) Run(ctx context.Context) error {
	var cause error
	select {
	case <-ctx.Done():
		h.log.Info("host: shutting down; releasing cells")
	case cause = <-h.Err():
		h.log.Error("host: listener failed; shutting down", "err", cause)
	case <-h.Fenced():
		cause = h.FenceErr()
		h.log.Error("host: SELF-FENCE: shutting down; the node never serves again, a supervisor should start a new one", "err", cause)
	}
	// Not ctx: it may be done already, and the shutdown still needs its
	// time to release every cell.
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	err := h.Close(closeCtx)
	if err != nil {
		h.log.Error("host: shutdown", "err", err)
	}
	return errors.Join(cause, err)
}
