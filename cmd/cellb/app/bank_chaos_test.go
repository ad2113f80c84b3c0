package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBankTransfersUnderChaos runs the bank example on three `cellb serve`
// processes on one local-files bucket, under the chaos of runBankChaos.
func TestBankTransfersUnderChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test skipped in -short mode")
	}
	runBankChaos(t, "file://"+t.TempDir(), 12*time.Second)
}

// TestBankTransfersUnderChaosS3 runs the same on the S3 server of .ci/run.
func TestBankTransfersUnderChaosS3(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test skipped in -short mode")
	}
	useS3(t)
	bucket := fmt.Sprintf("s3://%s/bank-%d", os.Getenv("CELLB_TEST_S3_BUCKET"), time.Now().UnixNano())
	runBankChaos(t, bucket, 20*time.Second)
}

// bankTransfer is one transfer a client made, and its final answer.
type bankTransfer struct {
	ID, From, To string
	Amount       int64
	applied      bool // answered 200 (by some attempt); else refused for want of funds
}

// bankSummary is GET /bank/<account>.
type bankSummary struct {
	Balance, Pending, Debits, Credits, Deposits int64
	Node                                        string
}

// runBankChaos runs three `cellb serve` processes with peers on bucket.
// Six accounts get 1000 each; then 20 clients make transfers between
// random accounts through random nodes for the chaos duration while a
// random node is SIGKILLed and restarted every 1–2 s. A client retries a
// transfer whose answer it did not get (with the same id, through any
// node) until it is answered 200 or refused for want of funds. Afterwards,
// once no debit is pending, no money appeared or vanished, every account
// recorded exactly the debits and credits of the transfers answered 200
// (each once, however often it was sent), and each balance is its opening
// plus its credits minus its debits.
func runBankChaos(t *testing.T, bucket string, chaos time.Duration) {
	bin := cellbBinary(t)
	const ttl = 2 * time.Second
	var procs []*proc
	for i := range 3 {
		logf, err := os.Create(filepath.Join(t.TempDir(), fmt.Sprintf("bank%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		p := &proc{name: fmt.Sprintf("b%d", i), logf: logf, watched: true, args: []string{
			"serve", "--bucket", bucket, "--node", fmt.Sprintf("b%d", i), "--data", t.TempDir(),
			"--listen", "127.0.0.1:0", "--peer-listen", "127.0.0.1:0", "--ttl", ttl.String(), "--idle", "5s",
		}}
		p.start(t, bin)
		procs = append(procs, p)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
			p.logf.Close()
		}
	})
	var mu sync.Mutex // guards procs' state
	client := &http.Client{Timeout: 5 * time.Second}
	pick := func(r *rand.Rand) *proc {
		for {
			mu.Lock()
			p := procs[r.IntN(len(procs))]
			usable := !p.dead && !p.stopped
			url := p.url
			mu.Unlock()
			if usable && url != "" {
				return p
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// send posts body to path through random nodes until an answer in
	// final comes, or the deadline.
	send := func(r *rand.Rand, path string, body any, deadline time.Time) (int, string) {
		b, _ := json.Marshal(body)
		for time.Now().Before(deadline) {
			p := pick(r)
			mu.Lock()
			url := p.url
			mu.Unlock()
			resp, err := client.Post(url+path, "application/json", bytes.NewReader(b))
			if err == nil {
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == 200:
					return 200, string(out)
				case resp.StatusCode == 409 && strings.Contains(string(out), `"error":"insufficient funds"`):
					return 409, string(out)
				case resp.StatusCode == 400:
					t.Errorf("%s %s: %d %s", path, b, resp.StatusCode, out)
					return resp.StatusCode, string(out)
				}
			}
			time.Sleep(time.Duration(20+r.IntN(30)) * time.Millisecond)
		}
		return 0, "no final answer before the deadline"
	}
	const accounts, opening = 6, 1000
	name := func(i int) string { return fmt.Sprintf("acct%d", i) }
	setup := rand.New(rand.NewPCG(7, 7))
	for i := range accounts {
		if status, body := send(setup, "/bank/"+name(i)+"/deposit", map[string]any{"id": "open", "amount": opening}, time.Now().Add(time.Minute)); status != 200 {
			t.Fatalf("opening deposit of %s: %d %s", name(i), status, body)
		}
	}

	ctx, stop := context.WithTimeout(context.Background(), chaos)
	defer stop()
	var tmu sync.Mutex
	var transfers []bankTransfer
	var wg sync.WaitGroup
	for c := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 22))
			for i := 0; ctx.Err() == nil; i++ {
				from := r.IntN(accounts)
				tr := bankTransfer{ID: fmt.Sprintf("c%d-%d", c, i), From: name(from), To: name((from + 1 + r.IntN(accounts-1)) % accounts), Amount: 1 + r.Int64N(200)}
				// Once started, a transfer is followed to its answer, chaos
				// or not.
				status, body := send(r, "/bank/transfer", map[string]any{"id": tr.ID, "from": tr.From, "to": tr.To, "amount": tr.Amount}, time.Now().Add(time.Minute))
				if status != 200 && status != 409 {
					t.Errorf("transfer %+v: %d %s", tr, status, body)
					return
				}
				tr.applied = status == 200
				tmu.Lock()
				transfers = append(transfers, tr)
				tmu.Unlock()
			}
		}()
	}
	restartExited := func() {
		for _, p := range procs {
			if !p.exitedByItself() {
				continue
			}
			t.Logf("%s exited by itself (%v); restarting it", p.name, p.exitErr)
			mu.Lock()
			p.dead = true
			mu.Unlock()
			p.kill()
			if err := p.tryStart(bin); err != nil {
				t.Fatal(err)
			}
		}
	}
	kills := 0
	r := rand.New(rand.NewPCG(99, 22))
	for ctx.Err() == nil {
		time.Sleep(time.Duration(1000+r.IntN(1000)) * time.Millisecond)
		restartExited()
		p := procs[r.IntN(len(procs))]
		mu.Lock()
		p.dead = true
		mu.Unlock()
		p.kill()
		kills++
		time.Sleep(300 * time.Millisecond)
		if err := p.tryStart(bin); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		p.dead = false
		mu.Unlock()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	restartExited()

	// Every debit's credit arrives (a retry, or the paying account's
	// alarm): wait until none is pending.
	read := func(account string) (bankSummary, bool) {
		mu.Lock()
		url := procs[r.IntN(len(procs))].url
		mu.Unlock()
		resp, err := client.Get(url + "/bank/" + account)
		if err != nil {
			return bankSummary{}, false
		}
		defer resp.Body.Close()
		var s bankSummary
		return s, resp.StatusCode == 200 && jsonDecode(resp, &s) == nil
	}
	final := map[string]bankSummary{}
	for deadline := time.Now().Add(time.Minute); ; {
		pending := int64(0)
		for i := range accounts {
			s, ok := read(name(i))
			if !ok {
				pending++
				continue
			}
			final[name(i)] = s
			pending += s.Pending
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("debits still pending (or accounts unreadable) a minute after the chaos: %+v", final)
		}
		time.Sleep(200 * time.Millisecond)
		restartExited()
	}

	want := map[string]bankSummary{}
	applied := 0
	for _, tr := range transfers {
		if !tr.applied {
			continue
		}
		applied++
		f, to := want[tr.From], want[tr.To]
		f.Debits++
		f.Balance -= tr.Amount
		to.Credits++
		to.Balance += tr.Amount
		want[tr.From], want[tr.To] = f, to
	}
	var total int64
	for i := range accounts {
		n := name(i)
		got, w := final[n], want[n]
		w.Balance += opening
		w.Deposits = 1
		w.Node = got.Node
		if got != w {
			t.Errorf("%s: %+v, want %+v", n, got, w)
		}
		total += got.Balance
	}
	if total != accounts*opening {
		t.Errorf("money: %d in all, want %d", total, accounts*opening)
	}
	if applied < 20 {
		t.Fatalf("only %d transfers applied: the fleet was not serving", applied)
	}
	t.Logf("%d transfers (%d applied, %d refused) under %d SIGKILLs; balances %+v", len(transfers), applied, len(transfers)-applied, kills, final)
}
