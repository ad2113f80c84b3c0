// Package peer lets the nodes of a fleet forward calls to a cell's owner
// over HTTP, authenticated with a key shared through the bucket.
//
// The key lives in fleet/peer-auth.json as {"version":1,"key":"<64 lowercase
// hex>"}, the record celld uses for its own peer RPC: the first node creates
// it create-only, every later node reads it. A forwarded request carries an
// HMAC-SHA256 over its method, path and query, a timestamp, a nonce, the
// destination node and its incarnation (the ownership_index_generation its
// node lease publishes, new at every start), the forwarding node, and the
// body's length and hash. The owner checks the signature from the headers
// before reading any body, and refuses a request signed for another node or
// incarnation, a repeated nonce, a timestamp too far from its own clock, a
// body over MaxBody (413) or one that does not match its hash.
package peer

import (
	"context"
	"crypto/rand"
	"errors"
	"io"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// KeyRecord is where the shared key lives: fleet/peer-auth.json.
const KeyRecord = layout.PeerAuthKey

// ErrBadKeyRecord: fleet/peer-auth.json exists but is not a valid record
// (layout.ErrBadPeerAuth). CellB never overwrites it.
var ErrBadKeyRecord = layout.ErrBadPeerAuth

// LoadOrCreateKey reads the fleet's peer key, creating it create-only when
// absent (a concurrent creator's key wins). rnd defaults to crypto/rand.
func LoadOrCreateKey(ctx context.Context, s store.Store, rnd io.Reader) ([]byte, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	for attempt := 0; attempt < 4; attempt++ {
		obj, err := s.Get(ctx, KeyRecord)
		if err == nil {
			return layout.DecodePeerAuth(obj.Data)
		}
		if !store.IsNotFound(err) {
			return nil, err
		}
		var k [32]byte
		if _, err := io.ReadFull(rnd, k[:]); err != nil {
			return nil, err
		}
		_, err = s.Put(ctx, KeyRecord, layout.EncodePeerAuth(k[:]), store.PutOptions{Condition: store.IfAbsent})
		if err == nil {
			return k[:], nil
		}
		if !store.IsPreconditionFailed(err) && !store.IsAmbiguous(err) {
			return nil, err
		}
		// Someone else created it, or ours may have applied: read it.
	}
	return nil, errors.New("peer: " + layout.PeerAuthKey + " could not be read or created")
}
