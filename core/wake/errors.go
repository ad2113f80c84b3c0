package wake

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cellb/cellb/core/layout"
)

// Malformed bucket records (entry bodies, retirement certificates, the
// format marker, the waker role) are reported as *layout.RecordError, like
// every other celld record CellB reads, so one errors.Is(err,
// layout.ErrMalformedRecord) covers them all.

// ErrMalformedKey is matched by every *KeyError.
var ErrMalformedKey = errors.New("malformed wake key")

// KeyError reports a wake entry key (or listed prefix) that celld would not
// classify. Such objects are left alone: deleting a name nobody can classify
// could destroy live work.
type KeyError struct {
	Key    string
	Reason string
	Err    error
}

func (e *KeyError) Error() string {
	msg := fmt.Sprintf("malformed wake key %q: %s", e.Key, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *KeyError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrMalformedKey, e.Err}
	}
	return []error{ErrMalformedKey}
}

// IdentityError reports text that is not a publication identity.
type IdentityError struct {
	Value  string
	Reason string
}

func (e *IdentityError) Error() string {
	return fmt.Sprintf("invalid wake identity %q: %s", e.Value, e.Reason)
}

// ErrRetireConflict is matched by every *RetireConflictError.
var ErrRetireConflict = errors.New("wake identity reused for a different alarm")

// RetireConflictError reports a stored retirement certificate with our
// identity but another due time. One identity names one installation, so
// this means an identity was reused: cleanup must stop for the cell rather
// than delete under a certificate that cannot both be true.
type RetireConflictError struct {
	Identity Identity
	// StoredAtMs and OursAtMs are the two due times (nil = no alarm).
	StoredAtMs, OursAtMs *int64
}

func (e *RetireConflictError) Error() string {
	return fmt.Sprintf("wake identity %s reused for a different alarm: retired at_ms %s, ours %s",
		e.Identity, fmtAtMs(e.StoredAtMs), fmtAtMs(e.OursAtMs))
}

func (e *RetireConflictError) Is(target error) bool { return target == ErrRetireConflict }

func fmtAtMs(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// ErrFormatBlocked is matched by every *FormatBlockedError.
var ErrFormatBlocked = errors.New("wake index format blocks startup")

// FormatBlock says why the wake index forbids this node to start.
type FormatBlock int

const (
	// BlockOtherFormat: wake/format.json names a format other than 2.
	BlockOtherFormat FormatBlock = iota + 1
	// BlockUnmarkedData: there is no wake/format.json, but an experimental
	// marker or immutable wake data exists. Without a marker nobody can
	// tell which identities it already retired, so celld refuses to
	// reinterpret it as a fleet without history, and so do we.
	BlockUnmarkedData
)

func (b FormatBlock) String() string {
	switch b {
	case BlockOtherFormat:
		return "other-format"
	case BlockUnmarkedData:
		return "unmarked-data"
	}
	return "?"
}

// FormatBlockedError says why startup must stop. An operator has to act
// (upgrade the binary, or clean the bucket); retrying cannot help.
type FormatBlockedError struct {
	Block FormatBlock
	// Format is the marker's format for BlockOtherFormat.
	Format int
	// Found lists the legacy key or prefixes holding data for
	// BlockUnmarkedData.
	Found []string
}

func (e *FormatBlockedError) Error() string {
	switch e.Block {
	case BlockOtherFormat:
		return fmt.Sprintf("%s: %s has format %d; this build reads only format %d", ErrFormatBlocked, layout.WakeFormatKey, e.Format, Format)
	case BlockUnmarkedData:
		return fmt.Sprintf("%s: %s is missing but wake data exists under %s", ErrFormatBlocked, layout.WakeFormatKey, strings.Join(e.Found, ", "))
	}
	return ErrFormatBlocked.Error()
}

func (e *FormatBlockedError) Is(target error) bool { return target == ErrFormatBlocked }
