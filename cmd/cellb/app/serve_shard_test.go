package app

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/shard"
)

// startClosable starts an embedded-default server the test closes itself
// (startServer's cleanup would close it a second time).
func startClosable(t *testing.T, dir string) (*server, *httptest.Server, func()) {
	t.Helper()
	s, err := newServer(context.Background(), serveConfig{Data: dir, Driver: "wasm", ScriptName: "cellb-example", Idle: time.Minute}, nil, nil, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.handler())
	var once sync.Once
	stop := func() {
		once.Do(func() {
			hs.Close()
			if err := s.close(context.Background()); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return s, hs, stop
}

// counterIn finds a counter name whose cell falls in the wanted shard (or,
// with other set, in any shard but it).
func counterIn(s *server, want int, other bool) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("n%d", i)
		got := shard.Of(s.app.NS.Key(s.app.NS.IDFromName(name)), 16)
		if (got == want) != other {
			return name
		}
	}
}

// TestTwoServersOnOneDataDir: two embedded-default servers on one --data
// directory never both serve a cell. The second routes every call for a
// cell of a shard the first holds to the first (its answers carry the
// first's epoch), and the first routes the second's cells to it; once the
// first closes, the second serves those cells from the first's data under
// a higher epoch.
func TestTwoServersOnOneDataDir(t *testing.T) {
	dir := t.TempDir()
	s1, hs1, stop1 := startClosable(t, dir)
	_, hs2, _ := startClosable(t, dir)

	var epoch1 string
	for want := int64(1); want <= 3; want++ {
		a := call(t, "POST", hs1.URL+"/counter/c")
		if a.status != 200 || a.value != want {
			t.Fatalf("first server: %+v, want %d", a, want)
		}
		epoch1 = a.epoch
	}
	if epoch1 == "0" || epoch1 == "" {
		t.Fatal("the first server's cell runs under epoch 0; the shard lease hands out epochs from 1")
	}
	// The second server's calls for the first's shard run at the first,
	// under its epoch.
	for _, c := range []struct {
		method string
		value  int64
	}{{"GET", 3}, {"POST", 4}} {
		if a := call(t, c.method, hs2.URL+"/counter/c"); a.status != 200 || a.value != c.value || a.epoch != epoch1 {
			t.Fatalf("second server, %s of the first's cell: %+v, want %d under the first's epoch %s", c.method, a, c.value, epoch1)
		}
	}
	held := shard.Of(s1.app.NS.Key(s1.app.NS.IDFromName("c")), 16)
	neighbour := counterIn(s1, held, false)
	an := call(t, "POST", hs2.URL+"/counter/"+neighbour)
	if an.status != 200 || an.value != 1 {
		t.Fatalf("second server, another cell of the held shard: %+v, want 1", an)
	}
	elsewhere := counterIn(s1, held, true)
	a := call(t, "POST", hs2.URL+"/counter/"+elsewhere)
	if a.status != 200 || a.value != 1 {
		t.Fatalf("second server, a cell of a free shard: %+v", a)
	}
	epoch2 := a.epoch
	if a := call(t, "POST", hs1.URL+"/counter/"+elsewhere); a.status != 200 || a.value != 2 || a.epoch != epoch2 {
		t.Fatalf("first server, the second's cell: %+v, want 2 under the second's epoch %s", a, epoch2)
	}

	stop1()
	a = call(t, "POST", hs2.URL+"/counter/c")
	if a.status != 200 || a.value != 5 {
		t.Fatalf("second server after the first closed: %+v, want 5 (the first's 4, plus one)", a)
	}
	// Above every epoch the first handed out in that shard.
	e1, _ := strconv.ParseUint(epoch1, 10, 64)
	en, _ := strconv.ParseUint(an.epoch, 10, 64)
	if e, _ := strconv.ParseUint(a.epoch, 10, 64); e <= max(e1, en) {
		t.Fatalf("second server's epoch %d is not above the first's %d and %d", e, e1, en)
	}
	if a := call(t, "GET", hs2.URL+"/counter/"+neighbour); a.status != 200 || a.value != 1 {
		t.Fatalf("second server, the neighbour cell after the first closed: %+v", a)
	}
}
