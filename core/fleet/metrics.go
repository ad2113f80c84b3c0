package fleet

import (
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/store"
)

// fenceCode is the short reason a self-fence is counted under
// (metrics.NameSelfFences' reason attribute).
func fenceCode(reason string) string {
	switch reason {
	case FenceLate:
		return "late"
	case FenceRenewedLate:
		return "renewed_late"
	case FenceReplaced:
		return "replaced"
	case FenceLogClosed:
		return "log_closed"
	}
	return "node_log"
}

// renewalOutcome names the result of one write of the node lease.
func renewalOutcome(err error) string {
	switch {
	case err == nil:
		return metrics.RenewalOK
	case store.IsAmbiguous(err):
		return metrics.RenewalAmbiguous
	case store.IsPreconditionFailed(err):
		return metrics.RenewalReplaced
	}
	return metrics.RenewalError
}
