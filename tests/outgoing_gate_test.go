package tests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// uploadHold holds (and, once told, fails) the bucket's uploads of the
// cells' commits: every put outside r2/ (only those under only, if set).
type uploadHold struct {
	only    string
	mu      sync.Mutex
	held    bool
	fail    bool
	release chan struct{}
	waiting atomic.Int64 // uploads being held now
}

func (h *uploadHold) before(ctx context.Context, c faultstore.Call) error {
	if c.Op != faultstore.OpPut || strings.HasPrefix(c.Key, "r2/") || !strings.HasPrefix(c.Key, h.only) {
		return nil
	}
	h.mu.Lock()
	if !h.held {
		defer h.mu.Unlock()
		if h.fail {
			return faultstore.ErrInjected
		}
		return nil
	}
	ch := h.release
	h.mu.Unlock()
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail {
		return faultstore.ErrInjected
	}
	return nil
}

func (h *uploadHold) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held, h.fail, h.release = true, false, make(chan struct{})
}

// let ends the hold: the held uploads go on, or fail (and so does every
// retry) with fail.
func (h *uploadHold) let(fail bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held, h.fail = false, fail
	close(h.release)
}

// gateObj is the caller and callee class of the test.
type gateObj struct{ st *cell.State }

func (o *gateObj) write(ctx context.Context) error {
	_, err := o.st.SQL().Exec(ctx, "INSERT INTO t(v) VALUES(1)")
	return err
}

// gateDoor is an http.Handler class; made is closed by its next request.
type gateDoor struct {
	made *atomic.Pointer[chan struct{}]
}

func (d *gateDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ch := d.made.Load(); ch != nil {
		close(*ch)
		d.made.Store(nil)
	}
	io.WriteString(w, "ok")
}

// gateStream answers "one\n" (flushed), then, once next is closed, writes
// a row and answers "two\n" (flushed): that chunk reveals the write.
type gateStream struct {
	st   *cell.State
	next chan struct{}
}

func (g *gateStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "one\n")
	w.(http.Flusher).Flush()
	<-g.next
	if _, err := g.st.SQL().Exec(r.Context(), "INSERT INTO t(v) VALUES(2)"); err != nil {
		return
	}
	io.WriteString(w, "two\n")
	w.(http.Flusher).Flush()
}

// firstRead closes made at the first Read: when an R2 put starts.
type firstRead struct {
	r    io.Reader
	made chan struct{}
	once sync.Once
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(func() { close(f.made) })
	return f.r.Read(p)
}

// TestOutgoingIOWaitsForTheUpload: with the bucket upload of a cell's commit
// held, an Await, a call into another cell (cell.Call, and a registered
// method), a Fetch of another cell and an R2 write made after the write
// all wait; when the upload fails,
// none of them is made and each handler gets the reset; with
// cell.AllowUnconfirmed each goes while the upload is held.
//
// It runs on the embedded default's node log (a process's commits share
// one bundle PUT: once one is held, the others queue behind it) and with
// per-cell uploads (each caller's upload is held on its own).
func TestOutgoingIOWaitsForTheUpload(t *testing.T) {
	t.Run("node-log", func(t *testing.T) { outgoingWaitsForTheUpload(t, false) })
	t.Run("per-cell", func(t *testing.T) { outgoingWaitsForTheUpload(t, true) })
}

func outgoingWaitsForTheUpload(t *testing.T, perCell bool) {
	drv, err := pickDriver("wasm", "NORMAL") // single host, LTX log
	if err != nil {
		t.Fatal(err)
	}
	hold := &uploadHold{}
	if !perCell {
		// The bundles alone: a cell reset by a failed bundle tiers its
		// acknowledged rows into its prefix as it closes, and a tiering
		// that fails fences the process (docs/durability.md).
		hold.only = layout.NodeLogPrefix
	}
	bucket := faultstore.New(memstore.New(), faultstore.Config{BeforeCall: hold.before})
	var doorMade, methodMade atomic.Pointer[chan struct{}]
	var objs *cell.Namespace[*gateObj]
	var touch *cell.Method[*gateObj, int, int]
	var doors *cell.Namespace[*gateDoor]
	var streams *cell.Namespace[*gateStream]
	streamNext := make(chan struct{})
	var images *r2.Bucket
	ltx := ltxlog.Mode()
	h, err := host.New(context.Background(), host.Config{
		Driver: drv, DataDir: t.TempDir(), Bucket: bucket, Mode: ltx, Ownership: host.SingleHost,
		SingleHost: host.SingleHostConfig{PerCellLog: perCell},
		R2:         map[string]string{"IMAGES": "images"}, Logger: quietLogger(),
		Classes: func(su *host.Setup) (err error) {
			objs, err = cell.Register(su.Runtime, "Obj", func(ctx context.Context, st *cell.State) (*gateObj, error) {
				_, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS t(v INTEGER)")
				return &gateObj{st}, err
			})
			if err != nil {
				return err
			}
			touch, err = cell.RegisterMethod(objs, "touch", func(ctx context.Context, o *gateObj, _ int) (int, error) {
				if m := methodMade.Swap(nil); m != nil {
					close(*m)
				}
				return 0, nil
			})
			if err != nil {
				return err
			}
			doors, err = cell.Register(su.Runtime, "Door", func(ctx context.Context, st *cell.State) (*gateDoor, error) {
				return &gateDoor{&doorMade}, nil
			})
			if err != nil {
				return err
			}
			streams, err = cell.Register(su.Runtime, "Stream", func(ctx context.Context, st *cell.State) (*gateStream, error) {
				_, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS t(v INTEGER)")
				return &gateStream{st, streamNext}, err
			})
			if err != nil {
				return err
			}
			images, err = su.R2("IMAGES")
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	caller := func(i int) *cell.Stub[*gateObj] { return objs.Get(objs.IDFromName("caller" + string(rune('a'+i)))) }
	callee := objs.Get(objs.IDFromName("callee"))
	door := doors.Get(doors.IDFromName("door"))

	kinds := []struct {
		name string
		do   func(ctx context.Context, made chan struct{}) error
	}{
		{"Await", func(ctx context.Context, made chan struct{}) error {
			_, err := cell.Await(ctx, func(context.Context) (int, error) { close(made); return 0, nil })
			return err
		}},
		{"typed call", func(ctx context.Context, made chan struct{}) error {
			_, err := cell.Call(ctx, callee, func(ctx context.Context, o *gateObj) (int, error) { close(made); return 0, nil })
			return err
		}},
		{"method call", func(ctx context.Context, made chan struct{}) error {
			methodMade.Store(&made)
			_, err := touch.Call(ctx, callee, 1)
			return err
		}},
		{"Fetch", func(ctx context.Context, made chan struct{}) error {
			doorMade.Store(&made)
			resp, err := door.Fetch(ctx, httptest.NewRequest("GET", "/", nil))
			if err == nil {
				resp.Body.Close()
			}
			return err
		}},
		{"R2 write", func(ctx context.Context, made chan struct{}) error {
			_, err := images.Put(ctx, "k", &firstRead{r: strings.NewReader("v"), made: made}, r2.PutOptions{})
			return err
		}},
	}

	// Every caller, the callee and the door are active, with a write
	// uploaded, before anything is held (a reset caller's next write
	// starts a new epoch, which writes to the bucket inside the turn).
	warm := func(t *testing.T) {
		for i := range kinds {
			if _, err := cell.Call(ctx, caller(i), func(ctx context.Context, o *gateObj) (int, error) { return 0, o.write(ctx) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	warm(t)
	if _, err := cell.Call(ctx, callee, func(ctx context.Context, o *gateObj) (int, error) { return 0, o.write(ctx) }); err != nil {
		t.Fatal(err)
	}
	if _, err := door.Fetch(ctx, httptest.NewRequest("GET", "/", nil)); err != nil {
		t.Fatal(err)
	}

	// start runs, on caller i, a handler that writes and then makes the
	// I/O (with ctx marked by mark, if set).
	start := func(i int, mark func(context.Context) context.Context) (made chan struct{}, done chan error) {
		made, done = make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := cell.Call(ctx, caller(i), func(ctx context.Context, o *gateObj) (int, error) {
				if err := o.write(ctx); err != nil {
					return 0, err
				}
				if mark != nil {
					ctx = mark(ctx)
				}
				return 0, kinds[i].do(ctx, made)
			})
			done <- err
		}()
		return made, done
	}

	// waitHeld waits until every caller's commit is held: its own upload
	// (per cell), or the one bundle PUT in flight while the rest queue
	// behind it (node log; room for them to queue).
	waitHeld := func(t *testing.T) {
		t.Helper()
		if perCell {
			waitFor(t, "every caller's upload to be held", func() bool { return hold.waiting.Load() >= int64(len(kinds)) })
			return
		}
		waitFor(t, "a bundle upload to be held", func() bool { return hold.waiting.Load() >= 1 })
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("held", func(t *testing.T) {
		hold.hold()
		var made []chan struct{}
		var done []chan error
		for i := range kinds {
			m, d := start(i, nil)
			made, done = append(made, m), append(done, d)
		}
		waitHeld(t)
		time.Sleep(50 * time.Millisecond) // room for an ungated I/O to show
		for i, k := range kinds {
			select {
			case <-made[i]:
				t.Errorf("%s was made while the commit before it was being uploaded", k.name)
			default:
			}
		}
		hold.let(false)
		for i, k := range kinds {
			<-made[i]
			if err := <-done[i]; err != nil {
				t.Errorf("%s: %v", k.name, err)
			}
		}
	})

	t.Run("failed", func(t *testing.T) {
		hold.hold()
		var made []chan struct{}
		var done []chan error
		for i := range kinds {
			m, d := start(i, nil)
			made, done = append(made, m), append(done, d)
		}
		waitHeld(t)
		hold.let(true)
		for i, k := range kinds {
			err := <-done[i]
			var berr *cell.BrokenObjectError
			if !errors.As(err, &berr) {
				t.Errorf("%s after a failed upload: %v, want a *BrokenObjectError", k.name, err)
			}
			select {
			case <-made[i]:
				t.Errorf("%s was made although the commit before it failed", k.name)
			default:
			}
		}
		hold.mu.Lock()
		hold.fail = false
		hold.mu.Unlock()
	})

	t.Run("unconfirmed", func(t *testing.T) {
		warm(t)
		hold.hold()
		var done []chan error
		for i, k := range kinds {
			m, d := start(i, cell.AllowUnconfirmed)
			done = append(done, d)
			select {
			case <-m:
			case <-ctx.Done():
				t.Fatalf("%s with AllowUnconfirmed did not go while the upload was held", k.name)
			}
		}
		hold.let(false)
		for i, k := range kinds {
			if err := <-done[i]; err != nil {
				t.Errorf("%s: %v", k.name, err)
			}
		}
	})

	// A chunk of a streamed response written after a write leaves only
	// once that write's upload is done.
	t.Run("streamed chunk", func(t *testing.T) {
		st := streams.Get(streams.IDFromName("s"))
		fetch := func() (*bufio.Reader, func()) {
			resp, err := st.Fetch(ctx, httptest.NewRequest("GET", "/", nil))
			if err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(resp.Body)
			if l, err := br.ReadString('\n'); l != "one\n" {
				t.Fatalf("first chunk %q, %v", l, err)
			}
			return br, func() { resp.Body.Close() }
		}
		br, done := fetch() // warm up: the cell is active, its table made
		streamNext <- struct{}{}
		if rest, err := io.ReadAll(br); err != nil || string(rest) != "two\n" {
			t.Fatalf("warm-up rest %q, %v", rest, err)
		}
		done()

		br, done = fetch()
		defer done()
		hold.hold()
		streamNext <- struct{}{}
		waitFor(t, "the chunk's write to be held", func() bool { return hold.waiting.Load() >= 1 })
		second := make(chan string, 1)
		go func() {
			l, err := br.ReadString('\n')
			second <- fmt.Sprintf("%q %v", l, err)
		}()
		time.Sleep(50 * time.Millisecond) // room for an ungated chunk to show
		select {
		case l := <-second:
			t.Fatalf("the chunk after the write came out while its upload was held: %s", l)
		default:
		}
		hold.let(false)
		if l := <-second; l != `"two\n" <nil>` {
			t.Fatalf("second chunk: %s", l)
		}
	})
}
