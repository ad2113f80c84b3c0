package layout

import (
	"strings"
	"testing"
)

func TestBundleKeyRoundTrip(t *testing.T) {
	gen := strings.Repeat("9a", 32)
	key := BundleKey("node_3f", gen, 1, 0)
	if want := "log/node_3f/" + gen + "/bundle/e1-00000000.ltxb"; key != want {
		t.Fatalf("BundleKey = %q, want %q", key, want)
	}
	for _, c := range []struct {
		epoch, seq uint64
	}{{1, 0}, {10, 7}, {3, 99999999}, {2, 123456789}} {
		k := BundleKey("n", "g", c.epoch, c.seq)
		f, ok := ParseBundleKey(k)
		if !ok || f.LogEpoch != c.epoch || f.Seq != c.seq || f.Node != "n" || f.Generation != "g" || f.Key != k {
			t.Errorf("ParseBundleKey(%q) = %+v, %v", k, f, ok)
		}
	}
	for _, bad := range []string{
		"log/n/g/bundle/e1-0000000.ltxb",   // 7 digits
		"log/n/g/bundle/e01-00000000.ltxb", // padded epoch
		"log/n/g/bundle/e1-00000000.ltx",
		"log/n/g/bundle/e1-0000000x.ltxb",
		"log/n/g/bundle/x/e1-00000000.ltxb",
		"log/n/g/other/e1-00000000.ltxb",
		"log/n//bundle/e1-00000000.ltxb",
		"cells/n/g/bundle/e1-00000000.ltxb",
		"log/n/g/bundle/e1-000000001.ltxb", // 9 digits with a leading zero
	} {
		if f, ok := ParseBundleKey(bad); ok {
			t.Errorf("ParseBundleKey(%q) = %+v, want refused", bad, f)
		}
	}
}

func TestSortBundlesNumerically(t *testing.T) {
	var fs []BundleFile
	for _, k := range []string{
		BundleKey("n", "g", 10, 0), BundleKey("n", "g", 9, 100000000), BundleKey("n", "g", 9, 2), BundleKey("n", "g", 1, 5),
	} {
		f, ok := ParseBundleKey(k)
		if !ok {
			t.Fatal(k)
		}
		fs = append(fs, f)
	}
	SortBundles(fs)
	var got []uint64
	for _, f := range fs {
		got = append(got, f.LogEpoch*1e9+f.Seq)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1] > got[i] {
			t.Fatalf("not in (epoch, seq) order: %v", fs)
		}
	}
}

func TestLossKeyAndSessions(t *testing.T) {
	if got, want := LossKey("n", "g", 3), "log/n/g.e3.loss.json"; got != want {
		t.Fatalf("LossKey = %q, want %q", got, want)
	}
	for key, want := range map[string][2]string{
		BundleKey("n", "g", 1, 1): {"n", "g"},
		LossKey("n", "g", 3):      {"n", "g"},
		SessionPrefix("n", "g"):   {"n", "g"},
	} {
		n, g, ok := SessionOfKey(key)
		if !ok || n != want[0] || g != want[1] {
			t.Errorf("SessionOfKey(%q) = %q, %q, %v", key, n, g, ok)
		}
	}
	for _, bad := range []string{"log/", "log/n", "log/n/", "nodes/n.json"} {
		if _, _, ok := SessionOfKey(bad); ok {
			t.Errorf("SessionOfKey(%q) ok", bad)
		}
	}
}

func TestOpenNodeLogEncodesAsCelldReadsIt(t *testing.T) {
	l := NodeLease{Node: "n", ExpiresMs: 5, Log: OpenNodeLog(1)}
	got := string(l.Encode())
	want := `"log":{"state":"open","epoch":1,"ensemble":[],"tiered":0,"active":false,"claimant":null,"claimed_ms":null}`
	if !strings.Contains(got, want) {
		t.Fatalf("encoded lease %s\nlacks %s", got, want)
	}
	l.Log.Ensemble = nil // an ensemble never becomes null
	if got := string(l.Encode()); !strings.Contains(got, `"ensemble":[]`) {
		t.Fatalf("nil ensemble encoded as %s", got)
	}
	back, err := DecodeNodeLease(NodeKey("n"), l.Encode())
	if err != nil || back.Log == nil || !back.Log.NeedsRecovery() || !back.Log.BucketRecoverable() {
		t.Fatalf("decoded %+v, %v", back.Log, err)
	}
}
