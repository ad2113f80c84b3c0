package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrMalformedRecord is matched by every *RecordError.
var ErrMalformedRecord = errors.New("malformed record")

// RecordError reports a bucket record that does not decode as celld's
// decoder would accept it. The record is left untouched.
type RecordError struct {
	Key    string
	Reason string
	Err    error
}

func (e *RecordError) Error() string {
	msg := fmt.Sprintf("malformed record %s: %s", e.Key, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *RecordError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrMalformedRecord, e.Err}
	}
	return []error{ErrMalformedRecord}
}

// OwnRecord is cells/<cell>/own.json: who owns a cell, and under which
// epoch. Node "" means deliberately released. Epochs never go down.
type OwnRecord struct {
	Node  string `json:"node"`
	Epoch uint64 `json:"epoch"`
}

// DecodeOwnRecord decodes own.json; both fields are required, as in celld.
func DecodeOwnRecord(key string, data []byte) (OwnRecord, error) {
	var raw struct {
		Node  *string `json:"node"`
		Epoch *uint64 `json:"epoch"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return OwnRecord{}, &RecordError{Key: key, Reason: "not a JSON object with node and epoch", Err: err}
	}
	if raw.Node == nil || raw.Epoch == nil {
		return OwnRecord{}, &RecordError{Key: key, Reason: `"node" and "epoch" are both required`}
	}
	return OwnRecord{Node: *raw.Node, Epoch: *raw.Epoch}, nil
}

// Encode writes the record compactly, as celld does.
func (r OwnRecord) Encode() []byte {
	b, _ := json.Marshal(r)
	return b
}

// NodeLease is nodes/<node>.json. CellB writes every field celld decodes;
// fields it does not know are kept in Extra when a record is read, so a
// rewrite (tombstoning, say) preserves them.
type NodeLease struct {
	Node      string `json:"node"`
	ExpiresMs uint64 `json:"expires_ms"`
	// Addr is host:port; celld routes a live owner's cells there.
	Addr                     string    `json:"addr"`
	ProbePublicKey           string    `json:"probe_public_key"`
	PeerProtocol             uint16    `json:"peer_protocol"`
	PacedHandoff             bool      `json:"paced_handoff"`
	OwnershipIndexGeneration string    `json:"ownership_index_generation"`
	Log                      *NodeLog  `json:"log,omitempty"`
	Load                     *NodeLoad `json:"load"`

	Extra map[string]json.RawMessage `json:"-"`
}

// NodeLog is the node-log state inside a lease (celld-node-log.md §3): a
// node running a node log publishes it open; a recoverer fences it
// (recovering) and seals it once every bundle row is in the per-cell
// prefixes. Claimant and ClaimedMs are written as null when unset, as
// celld 0.6 writes them.
type NodeLog struct {
	State     string   `json:"state"`
	Epoch     uint64   `json:"epoch"`
	Ensemble  []string `json:"ensemble"`
	Tiered    uint64   `json:"tiered"`
	Active    bool     `json:"active"`
	Claimant  *string  `json:"claimant"`
	ClaimedMs *uint64  `json:"claimed_ms"`
}

// NeedsRecovery reports whether a dead node's log must be recovered
// before its cells can be taken over: it is open or being recovered.
func (l *NodeLog) NeedsRecovery() bool {
	return l != nil && (l.State == NodeLogOpen || l.State == NodeLogRecovering)
}

// BucketRecoverable reports whether the log can be recovered from the
// bucket alone (celld-node-log.md §9): no acknowledgement of its epoch rode
// on followers (active is false), so its bundles and the per-cell prefixes
// hold every acknowledged row. A log with active set needs celld's
// follower seal and tail, which only a celld node performs.
func (l *NodeLog) BucketRecoverable() bool {
	return l != nil && !l.Active
}

// OpenNodeLog is the log member a session publishes when it opens its
// node log at epoch: open, no followers (CellB recruits none), nothing
// tiered, never active.
func OpenNodeLog(epoch uint64) *NodeLog {
	return &NodeLog{State: NodeLogOpen, Epoch: epoch, Ensemble: []string{}}
}

// NodeLoad is the advisory load sample. CellB reports itself as a node
// celld should never place cells on: placement weight 0, not pressured,
// bucket format 1 (so celld keeps opening every epoch with a snapshot while
// CellB nodes are live).
type NodeLoad struct {
	SampledMs             uint64            `json:"sampled_ms"`
	OwnedCells            uint64            `json:"owned_cells"`
	PlacementWeight       uint64            `json:"placement_weight"`
	BucketFormat          uint16            `json:"bucket_format"`
	ResidentCells         uint64            `json:"resident_cells"`
	HostWebsockets        uint64            `json:"host_websockets"`
	RSSBytes              uint64            `json:"rss_bytes"`
	InUseBytes            *uint64           `json:"in_use_bytes"`
	CgroupWorkingSetBytes *uint64           `json:"cgroup_working_set_bytes"`
	CgroupCurrentBytes    *uint64           `json:"cgroup_current_bytes"`
	CPUPercentX100        uint64            `json:"cpu_percent_x100"`
	OpenFDs               uint64            `json:"open_fds"`
	FDLimit               uint64            `json:"fd_limit"`
	Pressured             bool              `json:"pressured"`
	MemoryHeadroom        bool              `json:"memory_headroom"`
	ShedCells             uint64            `json:"shed_cells"`
	Restoring             uint64            `json:"restoring"`
	RebalancePaused       bool              `json:"rebalance_paused"`
	Draining              bool              `json:"draining"`
	ContainerInstances    map[string]uint64 `json:"container_instances,omitempty"`
}

// Live reports whether the lease is live at nowMs by celld's rule: it
// expires when expires_ms <= now.
func (l NodeLease) Live(nowMs uint64) bool { return l.ExpiresMs > nowMs }

// Routable reports whether celld would route a live owner's cells to it.
func (l NodeLease) Routable(nowMs uint64) bool { return l.Live(nowMs) && l.Addr != "" }

var nodeLeaseFields = map[string]bool{
	"node": true, "expires_ms": true, "addr": true, "probe_public_key": true, "peer_protocol": true,
	"paced_handoff": true, "ownership_index_generation": true, "log": true, "load": true,
}

// DecodeNodeLease decodes a node lease as celld does: node and expires_ms
// are required, everything else defaults; a present log object must carry
// its required fields.
func DecodeNodeLease(key string, data []byte) (NodeLease, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return NodeLease{}, &RecordError{Key: key, Reason: "not a JSON object", Err: err}
	}
	var probe struct {
		Node      *string `json:"node"`
		ExpiresMs *uint64 `json:"expires_ms"`
		Log       *struct {
			State    *string   `json:"state"`
			Epoch    *uint64   `json:"epoch"`
			Ensemble *[]string `json:"ensemble"`
			Tiered   *uint64   `json:"tiered"`
		} `json:"log"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return NodeLease{}, &RecordError{Key: key, Reason: "fields of the wrong type", Err: err}
	}
	if probe.Node == nil || probe.ExpiresMs == nil {
		return NodeLease{}, &RecordError{Key: key, Reason: `"node" and "expires_ms" are required`}
	}
	if l := probe.Log; l != nil && (l.State == nil || l.Epoch == nil || l.Ensemble == nil || l.Tiered == nil) {
		return NodeLease{}, &RecordError{Key: key, Reason: `"log" needs state, epoch, ensemble and tiered`}
	}
	var nl NodeLease
	if err := json.Unmarshal(data, &nl); err != nil {
		return NodeLease{}, &RecordError{Key: key, Reason: "fields of the wrong type", Err: err}
	}
	if want, ok := NodeOfKey(key); ok && nl.Node != want {
		return NodeLease{}, &RecordError{Key: key, Reason: fmt.Sprintf("record names node %q, key names %q", nl.Node, want)}
	}
	for k, v := range all {
		if !nodeLeaseFields[k] {
			if nl.Extra == nil {
				nl.Extra = map[string]json.RawMessage{}
			}
			nl.Extra[k] = v
		}
	}
	return nl, nil
}

// Encode writes the lease compactly with every known field (option fields
// as null, as celld writes them) plus any unknown fields read earlier.
func (l NodeLease) Encode() []byte {
	if l.Log != nil && l.Log.Ensemble == nil {
		// celld requires the member: an empty ensemble is [], not null.
		lg := *l.Log
		lg.Ensemble = []string{}
		l.Log = &lg
	}
	type plain NodeLease
	b, _ := json.Marshal(plain(l))
	if len(l.Extra) == 0 {
		return b
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	for k, v := range l.Extra {
		if _, known := m[k]; !known {
			m[k] = v
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	_ = enc.Encode(m)
	return bytes.TrimRight(buf.Bytes(), "\n")
}
