package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
)

// TestSingleHostNodeLogFoldsKilledProcesses: processes sharing --data
// write through node logs of their own (the embedded default). 24 clients
// write 24 counters through a, whose rows then sit in its log's bundles,
// not yet in the cells' prefixes; a is SIGKILLed. b, which shares the
// directory, takes a's shards over (its shard watch) and folds a's log:
// a's lock file goes, and every acknowledged value restores from the
// bucket. Then the clients write through b; a restore while b lives
// reads b's untiered rows from its bundles, and `cellb inspect` shows b's
// session open, then dead once b is SIGKILLed too; and c,
// started on the directory, folds b's log before it serves (at start-up,
// and its shard watch's first look would): again every acknowledged value
// restores, as `cellb restore` restores it. Last the clients write
// through c, which shuts down cleanly: it tiers its rows and deletes its
// session (no lock file, no bundle left), and every value restores from
// the cells' prefixes alone. Without the
// fold on takeover, the first check finds every counter at 1.
func TestSingleHostNodeLogFoldsKilledProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	data := t.TempDir()
	bucket := filepath.Join(data, "bucket")
	a := startServe(t, bin, "a", "--data", data)
	b := startServe(t, bin, "b", "--data", data)

	const clients, writes = 24, 20
	acked := make([]int64, clients)
	write := func(p *proc) {
		var wg sync.WaitGroup
		for i := 0; i < clients; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < writes; n++ {
					v, err := postCounter(p.url, fmt.Sprintf("k%d", i))
					if err != nil {
						t.Errorf("counter k%d on %s: %v", i, p.name, err)
						return
					}
					acked[i] = v
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	restoresAcked := func(when string) {
		t.Helper()
		for i := 0; i < clients; i++ {
			key := cell.CellKey("Counter", cell.IDFromName(defaultScriptName, "Counter", fmt.Sprintf("k%d", i)))
			if v := counterInImage(t, restoreAsCellB(t, bucket, key)); v != acked[i] {
				t.Errorf("%s: counter k%d restores to %d; %d was acknowledged", when, i, v, acked[i])
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}

	write(a)
	aGen := sessionOf(t, data, a)
	if n := bundlesOf(t, bucket, aGen); n == 0 {
		t.Fatal("a's log holds no bundle: its rows were tiered already, so this run shows nothing")
	}
	a.kill()
	waitFolded(t, data, aGen, b)
	restoresAcked("after b folded a's log")

	write(b)
	bGen := sessionOf(t, data, b)
	if n := bundlesOf(t, bucket, bGen); n == 0 {
		t.Fatal("b's log holds no bundle: this run shows nothing")
	}
	// A restore while b lives reads its untiered rows from its bundles.
	restoresAcked("while b is alive")
	inspectSession(t, bucket, bGen, "open")
	b.kill()
	inspectSession(t, bucket, bGen, "dead")
	c := startServe(t, bin, "c", "--data", data)
	// Folded before c serves: it said where it listens only after that.
	if _, err := os.Stat(filepath.Join(data, "shards", "nodelog", bGen+".lock")); !os.IsNotExist(err) {
		t.Fatalf("c serves but b's session lock is still there (%v); see %s", err, c.logf.Name())
	}
	restoresAcked("after c folded b's log at start-up")
	write(c)
	c.signal(syscall.SIGTERM)
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("c did not exit cleanly: %v (see %s)", err, c.logf.Name())
	}
	c.dead = true
	if left, _ := filepath.Glob(filepath.Join(data, "shards", "nodelog", "*.lock")); len(left) != 0 {
		t.Errorf("session locks left after every process ended: %v", left)
	}
	if logs, _ := filepath.Glob(filepath.Join(bucket, "log", "*", "*")); len(logs) != 0 {
		t.Errorf("node log sessions left in the bucket: %v", logs)
	}
	restoresAcked("after c wrote and closed cleanly")
}

// restoreAsCellB restores a cell as `cellb restore` does (the LTX mode's
// restore): the cell's prefix with the rows node logs hold laid over it.
func restoreAsCellB(t *testing.T, bucketURL, key string) []byte {
	t.Helper()
	s, err := openBucket(context.Background(), bucketMux(), bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	res, err := ltxlog.Restore(context.Background(), s, key, ltxlog.WithOverlay(s, key, ltxlog.RestoreOptions{}))
	if err != nil {
		t.Fatalf("restore %s: %v", key, err)
	}
	return res.Image
}

// inspectSession checks what `cellb inspect --json` says of a single host
// session: its state (read from the lock beside the bucket) and that it
// has bundles.
func inspectSession(t *testing.T, bucket, gen, state string) {
	t.Helper()
	code, out, errs := runBin(t, "inspect", bucket, "--json", "--quiet")
	var r struct {
		HostLogs []struct {
			Generation string
			State      string
			Bundles    int
		} `json:"host_logs"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("cellb inspect: exit %d, %v, stderr %q", code, err, errs)
	}
	for _, l := range r.HostLogs {
		if l.Generation == gen {
			if l.State != state || l.Bundles == 0 {
				t.Fatalf("cellb inspect shows session %s %+v; want %s with bundles", gen, l, state)
			}
			return
		}
	}
	t.Fatalf("cellb inspect does not show session %s: %+v", gen, r.HostLogs)
}

// postCounter increments a counter and returns the acknowledged value.
func postCounter(base, name string) (int64, error) {
	resp, err := http.Post(base+"/counter/"+name, "", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("%s: %s", resp.Status, body)
	}
	var v struct{ Value int64 }
	err = json.Unmarshal(body, &v)
	return v.Value, err
}

// sessionOf is the generation of p's node log session: the lock file that
// names its pid.
func sessionOf(t *testing.T, data string, p *proc) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(data, "shards", "nodelog", "*.lock"))
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err == nil && strings.TrimSpace(string(b)) == fmt.Sprintf("pid %d", p.cmd.Process.Pid) {
			return strings.TrimSuffix(filepath.Base(path), ".lock")
		}
	}
	t.Fatalf("no session lock names %s (pid %d) among %v", p.name, p.cmd.Process.Pid, paths)
	return ""
}

// bundlesOf counts a session's bundles in the files bucket.
func bundlesOf(t *testing.T, bucket, gen string) int {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(bucket, "log", "*", gen, "bundle", "*.ltxb"))
	return len(paths)
}

// waitFolded waits for a dead session's lock file to go: by was to fold
// it on taking over its shards.
func waitFolded(t *testing.T, data, gen string, by *proc) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(data, "shards", "nodelog", gen+".lock")); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s never folded the dead session %s (see %s)", by.name, gen, by.logf.Name())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
