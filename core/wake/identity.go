package wake

import (
	"fmt"
	"strconv"
)

// Identity names one alarm installation: the ownership epoch of the SQLite
// writer that committed it and the cell's persistent, never-repeating alarm
// sequence (celld's _cf_WAKE row). Each installation gets its own immutable
// entry key, so a late DELETE of an old identity can never remove a newer
// installation.
//
// Real identities have Epoch > 0. The zero identity belongs only to
// migration seeds, which must order below every real installation so any
// retirement certificate makes them obsolete.
type Identity struct {
	Epoch uint64
	Seq   uint64
}

// String renders the identity as celld writes it in keys and bodies:
// "<epoch:016x>-<seq:016x>", lowercase.
func (id Identity) String() string {
	return fmt.Sprintf("%016x-%016x", id.Epoch, id.Seq)
}

// IsZero reports whether id is the migration seeds' (0,0).
func (id Identity) IsZero() bool { return id == Identity{} }

// Compare orders identities by epoch, then sequence: -1, 0 or +1. A later
// epoch always wins, because a new writer keeps the old sequence.
func (id Identity) Compare(other Identity) int {
	switch {
	case id.Epoch < other.Epoch:
		return -1
	case id.Epoch > other.Epoch:
		return 1
	case id.Seq < other.Seq:
		return -1
	case id.Seq > other.Seq:
		return 1
	}
	return 0
}

// identityLen is len("<16 hex>-<16 hex>").
const identityLen = 16 + 1 + 16

// ParseIdentity reads "<epoch:016x>-<seq:016x>" strictly: exactly 16
// lowercase hex digits on each side of one '-', and a positive epoch. celld
// rejects anything else (its parser round-trips the text and refuses epoch
// 0), so an entry celld would never classify is never classified here
// either.
func ParseIdentity(s string) (Identity, error) {
	if len(s) != identityLen || s[16] != '-' {
		return Identity{}, &IdentityError{Value: s, Reason: "not <16 hex>-<16 hex>"}
	}
	for i := 0; i < len(s); i++ {
		if i == 16 {
			continue
		}
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return Identity{}, &IdentityError{Value: s, Reason: "not lowercase hexadecimal"}
		}
	}
	epoch, err1 := strconv.ParseUint(s[:16], 16, 64)
	seq, err2 := strconv.ParseUint(s[17:], 16, 64)
	if err1 != nil || err2 != nil { // unreachable after the checks above
		return Identity{}, &IdentityError{Value: s, Reason: "not hexadecimal"}
	}
	if epoch == 0 {
		return Identity{}, &IdentityError{Value: s, Reason: "epoch 0 belongs to no writer"}
	}
	return Identity{Epoch: epoch, Seq: seq}, nil
}
