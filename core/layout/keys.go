package layout

import (
	"fmt"
	"strings"
)

// CellsPrefix is where every cell's objects live: cells/<cell>/….
const CellsPrefix = "cells/"

// CellPrefix is one cell's objects: "cells/<cell>/".
func CellPrefix(cell string) string { return CellsPrefix + cell + "/" }

// CellOfPrefix is the cell a listed prefix "cells/<cell>/" names (a
// listing of CellsPrefix with delimiter "/" returns such prefixes). ok is
// false for anything not under CellsPrefix.
func CellOfPrefix(prefix string) (cell string, ok bool) {
	rest, ok := strings.CutPrefix(prefix, CellsPrefix)
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(rest, "/"), true
}

// ownFile is the ownership record's name inside a cell's prefix.
const ownFile = "own.json"

// OwnKey is a cell's ownership record: "cells/<cell>/own.json".
func OwnKey(cell string) string { return CellPrefix(cell) + ownFile }

// NodesPrefix is where node leases live: nodes/<node>.json.
const NodesPrefix = "nodes/"

// NodeKey is a node lease's key: "nodes/<node>.json".
func NodeKey(node string) string { return NodesPrefix + node + ".json" }

// NodeOfKey is the node a key under NodesPrefix names: the key less
// NodesPrefix and a ".json" suffix. ok is false for keys not under
// NodesPrefix.
func NodeOfKey(key string) (node string, ok bool) {
	rest, ok := strings.CutPrefix(key, NodesPrefix)
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(rest, ".json"), true
}

// PeerAuthKey is the fleet's shared peer key record,
// {"version":1,"key":"<64 lowercase hex>"} (see PeerAuthRecord).
const PeerAuthKey = "fleet/peer-auth.json"

// ProbePrefix is where the start-up probe writes its scratch objects.
const ProbePrefix = "probe/"

// ProbeKey is one probe run's object:
// "probe/cas-<unix ns>-<tag>-<random:016x>". tag must not contain '/'.
func ProbeKey(unixNano int64, tag string, random uint64) string {
	return fmt.Sprintf("%scas-%d-%s-%016x", ProbePrefix, unixNano, tag, random)
}

// R2Prefix is where R2-style objects live: r2/<bucket>/<key>.
const R2Prefix = "r2/"

// R2BucketPrefix is one R2 bucket's objects: "r2/<bucket>/".
func R2BucketPrefix(bucket string) string { return R2Prefix + bucket + "/" }

// R2Key is one R2 object's key: "r2/<bucket>/<key>".
func R2Key(bucket, key string) string { return R2BucketPrefix(bucket) + key }

// R2MultipartPrefix holds the parts of one bucket's unfinished multipart
// uploads, staged as objects until the upload completes:
// "r2-multipart/<bucket>/". celld does not read it.
func R2MultipartPrefix(bucket string) string { return "r2-multipart/" + bucket + "/" }
