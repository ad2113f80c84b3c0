package app

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/peer"
)

// freeAddr is a local address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestCapturedPeerRequestIsRefusedEverywhere: a call forwarded between two
// real nodes is captured on the wire (node a advertises a recording proxy
// in front of its peer port) and sent again: to a itself (a repeated
// nonce), to another node (signed for a), and to a after it restarted
// under the same id (signed for its previous incarnation). Each is refused
// with 401 and the counter is unchanged. A body over the limit sent to a
// node that would forward it is answered 413 and not forwarded.
func TestCapturedPeerRequestIsRefusedEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	bucketDir := t.TempDir()
	bucket := "file://" + bucketDir
	aPeer := freeAddr(t)
	var (
		mu       sync.Mutex
		captured *http.Request
		body     []byte
	)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		captured, body = r.Clone(r.Context()), b
		mu.Unlock()
		out, _ := http.NewRequest(r.Method, "http://"+aPeer+r.URL.RequestURI(), bytes.NewReader(b))
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	a := startNode(t, bin, bucket, "na", "--peer-listen", aPeer, "--advertise", strings.TrimPrefix(proxy.URL, "http://"))
	b := startNode(t, bin, bucket, "nb", "--peer-listen", "127.0.0.1:0")
	startNode(t, bin, bucket, "nc", "--peer-listen", "127.0.0.1:0")
	for _, p := range []*proc{a, b} {
		resp, err := http.Post(p.url+"/counter/x", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Cellb-Node") != "na" {
			t.Fatalf("via %s: %d from %q, want 200 from na", p.name, resp.StatusCode, resp.Header.Get("X-Cellb-Node"))
		}
	}
	// A body over the limit for a cell owned elsewhere: 413, not forwarded.
	resp, err := http.Post(b.url+"/counter/x", "", bytes.NewReader(make([]byte, peer.MaxBody+1)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The public port's body limit (host.Limits.MaxBodyBytes, 1 MiB as
	// peer.MaxBody) answers before anything could be forwarded.
	if want := "request body over 1048576 bytes\n"; resp.StatusCode != http.StatusRequestEntityTooLarge || string(got) != want {
		t.Fatalf("oversized body through b: %d %q, want 413 %q", resp.StatusCode, got, want)
	}
	mu.Lock()
	if captured == nil || captured.Header.Get(peer.HeaderForwarded) != "nb" {
		t.Fatalf("no call from nb was captured: %v", captured)
	}
	mu.Unlock()
	peerAddrOf := func(node string) string {
		data, err := os.ReadFile(filepath.Join(bucketDir, "nodes", node+".json"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := layout.DecodeNodeLease(layout.NodeKey(node), data)
		if err != nil {
			t.Fatal(err)
		}
		return l.Addr
	}
	replay := func(to, want string) {
		t.Helper()
		out, _ := http.NewRequest(captured.Method, "http://"+to+captured.URL.RequestURI(), bytes.NewReader(body))
		out.Header = captured.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(got), want) {
			t.Errorf("replayed to %s: %d %q, want 401 with %q", to, resp.StatusCode, got, want)
		}
	}
	replay(aPeer, "peer request not authenticated: replayed request (nonce already seen)")
	replay(peerAddrOf("nc"), `peer request not authenticated: signed for node "na", this is node "nc"`)
	a.signal(syscall.SIGTERM)
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("a did not exit cleanly: %v", err)
	}
	a.start(t, bin)
	replay(aPeer, `peer request not authenticated: signed for another incarnation of node "na" (it restarted since)`)
	resp, err = http.Get(a.url + "/counter/x")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Value int64 }
	if err := jsonDecode(resp, &v); err != nil || v.Value != 2 {
		t.Fatalf("counter after the replays: %d (%v), want 2", v.Value, err)
	}
	resp.Body.Close()
}
