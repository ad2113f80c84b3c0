package wake

import (
	"fmt"
	"strconv"

	"github.com/cellb/cellb/core/layout"
)

// Retired is a retirement certificate: the newest installation whose
// state (due at AtMs, or no alarm when nil) is proven durable and owned.
// Every identity below it is obsolete, and so is the identity itself when
// it installed "no alarm". A stale certificate is only conservative: it
// protects everything newer, including publications still in flight.
type Retired struct {
	Identity Identity
	AtMs     *int64
}

// Encode writes the certificate as celld's RetirementRecord serializes:
// members in declaration order, at_ms null when there is no alarm.
//
//	{"format":2,"identity":"<id>","at_ms":<ms>|null}
func (r Retired) Encode() []byte {
	b := make([]byte, 0, 80)
	b = append(b, `{"format":2,"identity":"`...)
	b = append(b, r.Identity.String()...)
	b = append(b, `","at_ms":`...)
	if r.AtMs == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *r.AtMs, 10)
	}
	return append(b, '}')
}

// DecodeRetired reads a certificate as celld does (deny_unknown_fields):
// format 2, a canonical identity with a positive epoch, and at_ms null or
// a non-negative integer. A missing at_ms reads as null, because serde
// defaults an absent Option. key is only used in errors.
func DecodeRetired(key string, data []byte) (Retired, error) {
	bad := func(reason string, err error) (Retired, error) {
		return Retired{}, &layout.RecordError{Key: key, Reason: reason, Err: err}
	}
	f, err := readObject(data)
	if err != nil {
		return bad("not a JSON object", err)
	}
	if u := f.unknown("format", "identity", "at_ms"); u != "" {
		return bad(fmt.Sprintf("unknown member %q", u), nil)
	}
	if err := checkFormatMember(f); err != nil {
		return bad(err.Error(), nil)
	}
	raw, ok := f["identity"]
	if !ok {
		return bad(`"identity" is required`, nil)
	}
	s, ok := jsonString(raw)
	if !ok {
		return bad(`"identity" is not a string`, nil)
	}
	var r Retired
	if r.Identity, err = ParseIdentity(s); err != nil {
		return bad(`bad "identity"`, err)
	}
	if raw, ok := f["at_ms"]; ok && !isNull(raw) {
		at, ok := jsonInt64(raw)
		if !ok || at < 0 {
			return bad(`"at_ms" is neither null nor a non-negative integer`, nil)
		}
		r.AtMs = &at
	}
	return r, nil
}

// Obsolete reports whether the publication id is retired by r: it is older
// than the certificate, or it is the certified installation and that
// installation removed the alarm. Obsolete entries may be plain-DELETEd; a
// later PUT of the same name can only recreate an obsolete key.
func Obsolete(id Identity, r Retired) bool {
	c := id.Compare(r.Identity)
	return c < 0 || c == 0 && r.AtMs == nil
}

// sameAtMs compares two due times, nil meaning "no alarm".
func sameAtMs(a, b *int64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
