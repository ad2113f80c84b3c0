//go:build unix

package fs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
)

// The multi-process tests run this test binary again as child processes.
// A child opens the store on the directory named by childDirEnv, reads
// commands from stdin and answers one line per event on stdout.
const (
	childDirEnv      = "CELLB_FS_TEST_CHILD_DIR"
	childIDEnv       = "CELLB_FS_TEST_CHILD_ID"
	childPauseEnv    = "CELLB_FS_TEST_CHILD_PAUSE"    // sleep while holding the lock, before publishing
	childStopEnv     = "CELLB_FS_TEST_CHILD_STOP"     // block for ever at this step of a Put
	childSidecarsEnv = "CELLB_FS_TEST_CHILD_SIDECARS" // "1": write with WithSidecarRecords
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		os.Exit(childMain(dir))
	}
	os.Exit(m.Run())
}

// childOut serialises the child's answer lines.
type childOut struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *childOut) say(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.w, format+"\n", args...)
}

func childMain(dir string) int {
	out := &childOut{w: os.Stdout}
	id := os.Getenv(childIDEnv)
	pause, _ := time.ParseDuration(os.Getenv(childPauseEnv))
	stop := os.Getenv(childStopEnv)

	base, closeBase, err := osFs(dir)
	if err != nil {
		out.say("err open: %v", err)
		return 1
	}
	defer closeBase()
	h := &hookFs{Fs: base}
	block := func(step string) {
		out.say("stopped %s", step)
		select {} // until killed
	}
	isData := func(newname string) bool { return !strings.HasPrefix(newname, metaDir+"/") }
	// A new key's Put publishes its file by "link", any other by
	// "rename"; the steps name which one they stop at.
	h.unnamed = true
	h.before = func(op, _, newname string) error {
		switch op {
		case "link":
			if stop == "before-link" && isData(newname) {
				block(stop)
			}
			return nil
		case "rename":
		default:
			return nil
		}
		switch {
		case stop == "before-sidecar" && strings.HasPrefix(newname, recordDir+"/"):
			block(stop)
		case stop == "before-data" && isData(newname):
			block(stop)
		case isData(newname) && pause > 0:
			out.say("inlock")
			time.Sleep(pause)
		}
		return nil
	}
	h.after = func(op, _, newname string) {
		if op == "rename" && stop == "after-data" && isData(newname) ||
			op == "link" && stop == "after-link" && isData(newname) {
			block(stop)
		}
	}
	opts := []Option{WithFs(h), WithTempExpiry(0)}
	if os.Getenv(childSidecarsEnv) == "1" {
		opts = append(opts, WithSidecarRecords())
	}
	s, err := Open(dir, opts...)
	if err != nil {
		out.say("err open: %v", err)
		return 1
	}
	defer s.Close()
	ctx := context.Background()

	// put settles a conditional write; an ambiguous outcome is settled by
	// reading back (bodies are unique).
	put := func(key, body string, opts store.PutOptions) (string, error) {
		_, err := s.Put(ctx, key, []byte(body), opts)
		switch {
		case err == nil:
			return "won", nil
		case errors.Is(err, store.ErrPreconditionFailed):
			return "lost", nil
		case errors.Is(err, store.ErrAmbiguous):
			o, gerr := s.Get(ctx, key)
			if gerr == nil && string(o.Data) == body {
				return "won", nil
			}
			return "lost", gerr
		}
		return "", err
	}

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "create": // create <round>
			key := "race/create-" + f[1]
			res, err := put(key, fmt.Sprintf("create %s child %s", f[1], id), store.PutOptions{Condition: store.IfAbsent})
			if err != nil {
				out.say("err %v", err)
				return 1
			}
			out.say("%s %s", res, f[1])
		case "cas": // cas <round> <version>
			res, err := put("race/cas", fmt.Sprintf("cas %s child %s", f[1], id), store.PutOptions{Condition: store.IfVersion(store.Version(f[2]))})
			if err != nil {
				out.say("err %v", err)
				return 1
			}
			out.say("%s %s", res, f[1])
		case "count": // count <key> <n>: n successful increments
			key := f[1]
			n, _ := strconv.Atoi(f[2])
			for done, attempt := 0, 0; done < n; attempt++ {
				o, err := s.Get(ctx, key)
				if err != nil {
					out.say("err get: %v", err)
					return 1
				}
				v, err := counterOf(o.Data)
				if err != nil {
					out.say("torn %q", o.Data)
					return 1
				}
				res, err := put(key, fmt.Sprintf("%d child %s attempt %d", v+1, id, attempt), store.PutOptions{Condition: store.IfVersion(o.Version)})
				if err != nil {
					out.say("err put: %v", err)
					return 1
				}
				if res == "won" {
					done++
					out.say("inc %d", v+1)
				}
			}
			out.say("done")
		case "put", "create-key": // put <key> <body> <gen> | create-key <key> <body>
			opts := store.PutOptions{Condition: store.IfAbsent} // as a node log's bundle
			if f[0] == "put" {
				opts = store.PutOptions{Metadata: map[string]string{"gen": f[3]}}
			}
			v, err := s.Put(ctx, f[1], []byte(f[2]), opts)
			if err != nil {
				out.say("err %v", err)
				return 1
			}
			out.say("ok %s", v)
		default:
			out.say("err unknown command %q", f[0])
			return 1
		}
	}
	return 0
}

// counterOf parses a counter body, "<n> ...".
func counterOf(b []byte) (int, error) {
	first, _, _ := strings.Cut(string(b), " ")
	return strconv.Atoi(first)
}

// hub collects the lines of every child of one test.
type hub struct {
	t      *testing.T
	dir    string
	events chan event
	quit   chan struct{} // closed when the test ends: readers stop handing lines over
}

// event is one line from a child; line is "" when its stdout ended.
type event struct {
	c    *child
	line string
}

func newHub(t *testing.T, dir string) *hub {
	h := &hub{t: t, dir: dir, events: make(chan event, 1<<14), quit: make(chan struct{})}
	t.Cleanup(func() { close(h.quit) })
	return h
}

// child is a running child process, seen from the test.
type child struct {
	id     int
	h      *hub
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	eof    chan struct{} // closed when stdout ends
	once   sync.Once
}

// start starts a child. The test's cleanup kills and reaps it, whatever
// happens to the test; children registered later are killed first.
func (h *hub) start(id int, env ...string) *child {
	t := h.t
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+h.dir, childIDEnv+"="+strconv.Itoa(id))
	cmd.Env = append(cmd.Env, env...)
	c := &child{id: id, h: h, cmd: cmd, stderr: &syncBuffer{}, eof: make(chan struct{})}
	cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.kill)
	go func() {
		defer close(c.eof)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case h.events <- event{c, sc.Text()}:
			case <-h.quit:
				return
			}
		}
		select {
		case h.events <- event{c, ""}:
		case <-h.quit:
		}
	}()
	return c
}

func (c *child) send(t *testing.T, format string, args ...any) {
	t.Helper()
	if _, err := fmt.Fprintf(c.stdin, format+"\n", args...); err != nil {
		t.Fatalf("child %d: %v (stderr: %s)", c.id, err, c.stderr)
	}
}

// kill ends the child with SIGKILL (if it still runs) and reaps it. Every
// line the child wrote before it died still reaches the hub.
func (c *child) kill() {
	c.once.Do(func() {
		c.cmd.Process.Signal(syscall.SIGKILL)
		c.stdin.Close()
		// Wait closes the pipe, so reap only after the reader is done.
		select {
		case <-c.eof:
		case <-c.h.quit:
		case <-time.After(30 * time.Second):
		}
		c.cmd.Wait()
	})
}

// diedf fails the test for a child that ended by itself, with what it
// left on stderr and its exit status.
func (c *child) diedf(t *testing.T) {
	t.Helper()
	c.kill()
	t.Fatalf("child %d ended unexpectedly (%v): %s", c.id, c.cmd.ProcessState, c.stderr)
}

// next returns the next line from any child, failing the test after
// timeout.
func (h *hub) next(timeout time.Duration) event {
	h.t.Helper()
	select {
	case ev := <-h.events:
		return ev
	case <-time.After(timeout):
		h.t.Fatalf("no answer from the child processes in %v", timeout)
		return event{}
	}
}

// syncBuffer is a bytes.Buffer safe to read while the child writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
