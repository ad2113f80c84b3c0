package layout

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// ErrBadPeerAuth: fleet/peer-auth.json exists but is not a valid record.
// CellB never overwrites it.
var ErrBadPeerAuth = errors.New("malformed " + PeerAuthKey)

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

type peerAuthRecord struct {
	Version int    `json:"version"`
	Key     string `json:"key"`
}

// DecodePeerAuth parses fleet/peer-auth.json strictly, as celld does:
// exactly version 1 and a 64-hex key, nothing else. It returns the 32-byte
// key; every failure matches ErrBadPeerAuth.
func DecodePeerAuth(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r peerAuthRecord
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPeerAuth, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data", ErrBadPeerAuth)
	}
	if r.Version != 1 || !hex64.MatchString(r.Key) {
		return nil, fmt.Errorf("%w: want version 1 and a 64-hex key", ErrBadPeerAuth)
	}
	return hex.DecodeString(r.Key)
}

// EncodePeerAuth writes the record for a 32-byte key:
// {"version":1,"key":"<64 lowercase hex>"}.
func EncodePeerAuth(key []byte) []byte {
	b, _ := json.Marshal(peerAuthRecord{Version: 1, Key: hex.EncodeToString(key)})
	return b
}
