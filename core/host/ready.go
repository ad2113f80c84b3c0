package host

import "errors"

// ErrShuttingDown is Ready's answer once Close has begun.
var ErrShuttingDown = errors.New("host: shutting down")

// Ready is nil while the node serves: New has returned (so the start-up
// probe and the fleet join are done), Close has not begun, and the node
// has not self-fenced. Otherwise it says why not: ErrShuttingDown, or the
// *fleet.FencedError. core/health's /readyz answers with it.
func (h *Host) Ready() error {
	if h.draining.Load() {
		return ErrShuttingDown
	}
	return h.FenceErr()
}
