package layout

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestOwnRecord(t *testing.T) {
	r, err := DecodeOwnRecord("k", []byte(`{"node":"node_a","epoch":7}`))
	if err != nil || r != (OwnRecord{"node_a", 7}) {
		t.Fatalf("%+v %v", r, err)
	}
	if got := string(OwnRecord{"", 7}.Encode()); got != `{"node":"","epoch":7}` {
		t.Fatalf("released record encodes as %s", got)
	}
	for _, bad := range []string{`{"node":"a"}`, `{"epoch":1}`, `{"node":1,"epoch":1}`, `{"node":"a","epoch":-1}`, `[]`, ``, `{"node":"a","epoch":1.5}`} {
		_, err := DecodeOwnRecord("cells/C:x/own.json", []byte(bad))
		var re *RecordError
		if !errors.As(err, &re) || !errors.Is(err, ErrMalformedRecord) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

func TestNodeLeaseRoundTripKeepsUnknownFields(t *testing.T) {
	in := `{"node":"node_b","expires_ms":1780109211091,"addr":"10.0.0.7:8080","probe_public_key":"9a","peer_protocol":2,"paced_handoff":true,"ownership_index_generation":"9a","log":{"state":"open","epoch":4,"ensemble":["node_c"],"tiered":0,"active":true,"claimant":null,"claimed_ms":null},"load":{"sampled_ms":1,"owned_cells":12,"placement_weight":100,"bucket_format":2,"resident_cells":3,"host_websockets":0,"rss_bytes":2,"in_use_bytes":1,"cgroup_working_set_bytes":null,"cgroup_current_bytes":null,"cpu_percent_x100":250,"open_fds":40,"fd_limit":1048576,"pressured":false,"memory_headroom":true,"shed_cells":0,"restoring":0,"rebalance_paused":false,"draining":false},"future_field":{"x":1}}`
	l, err := DecodeNodeLease("nodes/node_b.json", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !l.Log.NeedsRecovery() || l.Load.PlacementWeight != 100 || !l.Live(1780109211090) || l.Live(1780109211091) {
		t.Fatalf("decoded %+v", l)
	}
	out := l.Encode()
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["future_field"]; !ok {
		t.Fatal("unknown field dropped on re-encode")
	}
	load := m["load"].(map[string]any)
	if v, ok := load["cgroup_current_bytes"]; !ok || v != nil {
		t.Fatal("option fields must be written as null")
	}
}

func TestNodeLeaseStrictness(t *testing.T) {
	for _, bad := range []string{
		`{"node":"node_b"}`,
		`{"expires_ms":5}`,
		`{"node":"node_x","expires_ms":5}`,
		`{"node":"node_b","expires_ms":5,"log":{"state":"open"}}`,
		`{"node":"node_b","expires_ms":"5"}`,
		`not json`,
	} {
		if _, err := DecodeNodeLease("nodes/node_b.json", []byte(bad)); !errors.Is(err, ErrMalformedRecord) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
	l, err := DecodeNodeLease("nodes/node_b.json", []byte(`{"node":"node_b","expires_ms":5}`))
	if err != nil || l.Addr != "" || l.Load != nil {
		t.Fatalf("minimal lease: %+v %v", l, err)
	}
}

func FuzzDecodeRecords(f *testing.F) {
	f.Add([]byte(`{"node":"a","epoch":1}`))
	f.Add([]byte(`{"node":"node_b","expires_ms":5,"log":{"state":"open","epoch":1,"ensemble":[],"tiered":0}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := DecodeOwnRecord("k", data); err == nil {
			back, err := DecodeOwnRecord("k", r.Encode())
			if err != nil || back != r {
				t.Fatalf("own record does not round-trip: %+v %v", back, err)
			}
		} else if !errors.Is(err, ErrMalformedRecord) {
			t.Fatalf("untyped: %v", err)
		}
		if l, err := DecodeNodeLease("nodes/node_b.json", data); err == nil {
			if _, err := DecodeNodeLease("nodes/node_b.json", l.Encode()); err != nil {
				t.Fatalf("lease does not round-trip: %v", err)
			}
		} else if !errors.Is(err, ErrMalformedRecord) {
			t.Fatalf("untyped: %v", err)
		}
	})
}
