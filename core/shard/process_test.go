package shard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cellb/cellb/core/lease"
)

// The multi-process tests re-run this test binary as children. A child
// opens a Lease on CELLB_SHARD_DIR and either obeys commands on stdin
// ("serve") or contends for cells on its own ("contend").
const (
	envMode  = "CELLB_SHARD_CHILD"
	envDir   = "CELLB_SHARD_DIR"
	envCount = "CELLB_SHARD_COUNT"
	envProbe = "CELLB_SHARD_PROBE" // contend: the directory of owner files
	envSeed  = "CELLB_SHARD_SEED"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

func child(mode string) int {
	n, _ := strconv.Atoi(os.Getenv(envCount))
	l, err := Open(os.Getenv(envDir), n)
	if err != nil {
		fmt.Println("fatal", err)
		return 1
	}
	defer l.Close()
	switch mode {
	case "serve":
		serveCommands(l)
	case "contend":
		seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
		contend(l, os.Getenv(envProbe), seed)
	}
	return 0
}

// serveCommands answers "acquire <cell>" with "ok <epoch>", "elsewhere" or
// "err <message>", and "release <cell>" with "released", until stdin ends.
func serveCommands(l *Lease) {
	ctx := context.Background()
	grants := map[string]lease.Grant{}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		verb, cell, _ := strings.Cut(in.Text(), " ")
		switch verb {
		case "acquire":
			g, err := takeWriting(ctx, l, cell)
			switch {
			case err == nil:
				grants[cell] = g
				fmt.Println("ok", g.Epoch())
			case errors.As(err, new(*lease.CellOwnedElsewhereError)):
				fmt.Println("elsewhere")
			default:
				fmt.Println("err", err)
			}
		case "release":
			err := grants[cell].Release(ctx)
			delete(grants, cell)
			fmt.Println("released", err)
		}
	}
}

// contend takes random cells, and while it holds one writes its own token
// to the shard's owner file, waits a moment and checks that the file still
// holds its token. Two holders of one shard at once would overwrite each
// other's token. Each grant prints "grant <shard> <epoch>"; a clash prints
// "clash ...".
func contend(l *Lease, probe string, seed uint64) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, uint64(os.Getpid())))
	for granted := 0; granted < 60; {
		cell := fmt.Sprintf("Counter:k%d", r.IntN(12))
		g, err := takeWriting(ctx, l, cell)
		if errors.As(err, new(*lease.CellOwnedElsewhereError)) {
			time.Sleep(time.Duration(r.IntN(500)) * time.Microsecond)
			continue
		}
		if err != nil {
			fmt.Println("err", err)
			return
		}
		granted++
		i := Of(cell, l.Shards())
		token := fmt.Sprintf("%d %d", os.Getpid(), g.Epoch())
		path := filepath.Join(probe, fmt.Sprintf("owner-%d", i))
		if err := os.WriteFile(path, []byte(token), 0o644); err != nil {
			fmt.Println("err", err)
			return
		}
		fmt.Println("grant", i, g.Epoch())
		time.Sleep(time.Duration(200+r.IntN(800)) * time.Microsecond)
		if got, err := os.ReadFile(path); err != nil || string(got) != token {
			fmt.Printf("clash shard %d: held under %q, owner file says %q (%v)\n", i, token, got, err)
		}
		g.Release(ctx)
	}
	fmt.Println("done")
}

// proc is a running child.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startChild(t *testing.T, mode, dir string, n int, extra ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envMode+"="+mode, envDir+"="+dir, envCount+"="+strconv.Itoa(n))
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// ask sends one command and waits for its answer.
func (p *proc) ask(t *testing.T, cmd string) string {
	t.Helper()
	if _, err := fmt.Fprintln(p.stdin, cmd); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("%s: the child exited", cmd)
		}
		return line
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer", cmd)
	}
	return ""
}

func (p *proc) acquire(t *testing.T, cell string) (uint64, bool) {
	t.Helper()
	ans := p.ask(t, "acquire "+cell)
	if ans == "elsewhere" {
		return 0, false
	}
	var e uint64
	if _, err := fmt.Sscanf(ans, "ok %d", &e); err != nil {
		t.Fatalf("acquire %s: %q", cell, ans)
	}
	return e, true
}

func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}

// TestProcessCrashTakeover: the holder of a shard is SIGKILLed; the next
// process takes the cell on its very first try, under a higher epoch. A
// graceful exit hands over the same way.
func TestProcessCrashTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	const n = 4
	cell := "Counter:crash"
	neighbour := cellsIn(Of(cell, n), n, 2)[1] // another cell of its shard
	a, b := startChild(t, "serve", dir, n), startChild(t, "serve", dir, n)
	e1, ok := a.acquire(t, cell)
	if !ok {
		t.Fatal("the first process could not take a free cell")
	}
	if _, ok := b.acquire(t, cell); ok {
		t.Fatal("two live processes hold one cell")
	}
	if _, ok := b.acquire(t, neighbour); ok {
		t.Fatal("two live processes hold one shard")
	}
	a.kill(t)
	e2, ok := b.acquire(t, cell)
	if !ok {
		t.Fatal("the cell of a killed process was not free at once")
	}
	if e2 <= e1 {
		t.Fatalf("takeover epoch %d is not above the killed holder's %d", e2, e1)
	}
	c := startChild(t, "serve", dir, n)
	if _, ok := c.acquire(t, neighbour); ok {
		t.Fatal("a third process took a shard the second holds")
	}
	b.stdin.Close() // b closes its Lease and exits
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("graceful exit: %v", err)
	}
	e3, ok := c.acquire(t, cell)
	if !ok || e3 <= e2 {
		t.Fatalf("after a graceful exit: granted=%v epoch %d (previous %d)", ok, e3, e2)
	}
}

// TestProcessesNeverShareAShard: processes contend for the cells of two
// shards while the parent SIGKILLs some of them mid-way. No two live
// processes ever hold a shard together, and no epoch of a shard is handed
// out twice.
func TestProcessesNeverShareAShard(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir, probe := t.TempDir(), t.TempDir()
	const n = 2
	type grant struct {
		proc  int
		shard int
		epoch uint64
	}
	var grants []grant
	seen := map[[2]uint64]int{}
	read := func(id int, p *proc, upTo int) (finished bool) {
		count := 0
		for line := range p.lines {
			switch {
			case strings.HasPrefix(line, "grant "):
				var g grant
				fmt.Sscanf(line, "grant %d %d", &g.shard, &g.epoch)
				g.proc = id
				key := [2]uint64{uint64(g.shard), g.epoch}
				if other, dup := seen[key]; dup {
					t.Errorf("shard %d epoch %d granted to process %d and %d", g.shard, g.epoch, other, id)
				}
				seen[key] = id
				grants = append(grants, g)
				if count++; count == upTo {
					return false
				}
			case line == "done":
				return true
			default:
				t.Errorf("process %d: %s", id, line)
			}
		}
		return false
	}
	const workers, rounds = 3, 3
	id := 0
	for round := 0; round < rounds; round++ {
		var ps []*proc
		for w := 0; w < workers; w++ {
			ps = append(ps, startChild(t, "contend", dir, n, envProbe+"="+probe, envSeed+"="+strconv.Itoa(round*workers+w)))
		}
		// Kill the first worker a little way in, holding or not.
		read(id, ps[0], 10)
		ps[0].kill(t)
		read(id, ps[0], -1) // what it printed before it died
		for w, p := range ps[1:] {
			if !read(id+1+w, p, -1) {
				t.Errorf("worker %d did not finish", id+1+w)
			}
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("worker %d: %v", id+1+w, err)
			}
		}
		id += workers
	}
	// Within each process, a shard's epochs only grow.
	last := map[[2]int]uint64{}
	for _, g := range grants {
		k := [2]int{g.proc, g.shard}
		if g.epoch <= last[k] {
			t.Errorf("process %d saw shard %d go from epoch %d to %d", g.proc, g.shard, last[k], g.epoch)
		}
		last[k] = g.epoch
	}
	if len(grants) < rounds*(workers-1)*60 {
		t.Fatalf("only %d grants", len(grants))
	}
}
