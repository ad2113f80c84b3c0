package wake

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/cellb/cellb/core/layout"
)

// DefaultTick is celld's waker tick (CELLD_WAKER_TICK_MS): the period of the
// due scan and of cleanup.
const DefaultTick = 60 * time.Second

// RoleTTL is the waker role's lease length for a tick: three ticks, so a
// holder that renews every tick survives two missed ones.
func RoleTTL(tick time.Duration) time.Duration { return 3 * tick }

// WakerRecord is wake/waker.json. The role is advisory: it spares the fleet
// N pollers of unowned cells; correctness never depends on it, because
// activations race on the ownership record anyway.
type WakerRecord struct {
	Node      string
	ExpiresMs uint64
}

// Encode writes {"node":"<node>","expires_ms":<ms>} as celld formats it.
// (celld formats the node with Rust's Debug quoting, which equals JSON for
// every printable ASCII name without '"' or '\\'; node names are such.)
func (r WakerRecord) Encode() []byte {
	b := make([]byte, 0, 48+len(r.Node))
	b = append(b, `{"node":`...)
	b = appendString(b, r.Node)
	b = append(b, `,"expires_ms":`...)
	b = strconv.AppendUint(b, r.ExpiresMs, 10)
	return append(b, '}')
}

// DecodeWaker reads the role lease as celld does: node (a string) and
// expires_ms (an integer) are both required, unknown members are ignored
// (celld does not deny them). celld reads expires_ms as an i64, so a value
// above 2^63-1 is rejected here too; a negative one, which celld would read
// as long expired, is rejected as malformed. celld treats a record it cannot
// read like an expired one, so a caller should answer a decode error with
// TakeOver (an If-Match write over what it read).
func DecodeWaker(data []byte) (WakerRecord, error) {
	bad := func(reason string, err error) (WakerRecord, error) {
		return WakerRecord{}, &layout.RecordError{Key: layout.WakerKey, Reason: reason, Err: err}
	}
	f, err := readObject(data)
	if err != nil {
		return bad("not a JSON object", err)
	}
	rawNode, ok1 := f["node"]
	rawExp, ok2 := f["expires_ms"]
	if !ok1 || !ok2 {
		return bad(`"node" and "expires_ms" are both required`, nil)
	}
	var r WakerRecord
	var ok bool
	if r.Node, ok = jsonString(rawNode); !ok {
		return bad(`"node" is not a string`, nil)
	}
	if r.ExpiresMs, ok = jsonUint(rawExp, 64); !ok || r.ExpiresMs > math.MaxInt64 {
		return bad(fmt.Sprintf(`"expires_ms" is not an integer 0-%d`, int64(math.MaxInt64)), nil)
	}
	return r, nil
}
