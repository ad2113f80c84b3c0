package wake

// ElectionAction is what a node does with the waker role on a tick.
type ElectionAction int

const (
	// Claim: there is no role lease; create it create-only.
	Claim ElectionAction = iota + 1
	// Renew: we hold it; rewrite it If-Match with a new expiry.
	Renew
	// TakeOver: its holder let it expire; rewrite it If-Match.
	TakeOver
	// Standby: another node holds a live role; scan only our own cells.
	Standby
)

func (a ElectionAction) String() string {
	switch a {
	case Claim:
		return "claim"
	case Renew:
		return "renew"
	case TakeOver:
		return "take-over"
	case Standby:
		return "standby"
	}
	return "?"
}

// Elects reports whether the action makes this node the waker once its
// write applies.
func (a ElectionAction) Elects() bool { return a == Claim || a == Renew || a == TakeOver }

// DecideElection decides the waker role from the record read (nil when
// absent). The written record is {self, nowMs + RoleTTL}. An exactly expired
// role (expires_ms == nowMs) is claimable: the role is a singleton, and
// hesitating on the boundary would leave every unowned cell's alarm unwoken
// for a tick. A rejected write means someone else won: stand by, unless a
// re-read shows our own node holds it (two of our loops renewing at once).
func DecideElection(rec *WakerRecord, self string, nowMs uint64) ElectionAction {
	switch {
	case rec == nil:
		return Claim
	case rec.Node == self:
		return Renew
	case rec.ExpiresMs <= nowMs:
		return TakeOver
	}
	return Standby
}

// RenewDue reports whether our role lease rec, written with ttlMs, is due
// for renewal at nowMs: TTL/3 has passed since it was written
// (rec.ExpiresMs - ttlMs). With celld's TTL of three ticks that is once per
// tick, leaving two ticks of slack before the role can be taken over.
func RenewDue(rec WakerRecord, nowMs, ttlMs uint64) bool {
	keep := ttlMs - ttlMs/3 // how long a fresh renewal is still good for
	if rec.ExpiresMs <= keep {
		return true
	}
	return nowMs >= rec.ExpiresMs-keep
}
