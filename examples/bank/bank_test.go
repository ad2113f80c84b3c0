package bank

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/wasm"
)

type node struct {
	h   *host.Host
	app *App
	url string
}

// fleet starts n nodes serving the bank on one in-memory bucket.
func fleet(t *testing.T, n int) []*node {
	t.Helper()
	bucket, dir := memstore.New(), t.TempDir()
	var nodes []*node
	for range n {
		nodes = append(nodes, startNode(t, bucket, dir))
	}
	return nodes
}

func startNode(t *testing.T, bucket store.Store, dir string) *node {
	t.Helper()
	ctx := context.Background()
	public, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peers, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nd := &node{url: "http://" + public.Addr().String()}
	nd.h, err = host.New(ctx, host.Config{
		Driver:  wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=OFF")),
		DataDir: dir, Bucket: bucket, Mode: ltxlog.Mode(), Ownership: host.Fleet,
		Fleet:    host.FleetConfig{PeerListener: peers},
		Listener: public,
		Classes: func(s *host.Setup) (err error) {
			if nd.app, err = Register(s.Runtime, Options{Node: s.Node}); err != nil {
				return err
			}
			nd.app.Routes(s.Mux)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.h.Close(ctx) })
	return nd
}

type answer struct {
	status int
	body   string
	node   string
}

func post(t *testing.T, url string, body any) answer {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(out), resp.Header.Get("X-Cellb-Node")}
}

// summary reads the account through url, and says which node owns it.
func summary(t *testing.T, url, account string) (Summary, string) {
	t.Helper()
	resp, err := http.Get(url + "/bank/" + account)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s Summary
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &s) != nil {
		t.Fatalf("GET %s: %d %s", account, resp.StatusCode, b)
	}
	owner := s.Node
	s.Node = ""
	return s, owner
}

// own makes node nd the owner of account (its first call lands there).
func own(t *testing.T, nd *node, account string, deposit int64) {
	t.Helper()
	if _, err := nd.app.Deposit(context.Background(), account, "open-"+account, deposit); err != nil {
		t.Fatal(err)
	}
}

// TestTransferAppliesOnce: a transfer between accounts owned by two nodes,
// sent to the third, moves the money; the same transfer retried through
// another node applies nothing more; a transfer over the balance is
// refused without a trace; a retried deposit applies once.
func TestTransferAppliesOnce(t *testing.T) {
	nodes := fleet(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	own(t, a, "alice", 100)
	own(t, b, "bob", 0)
	tr := Transfer{ID: "t1", From: "alice", To: "bob", Amount: 40}
	if r := post(t, c.url+"/bank/transfer", tr); r.status != 200 || r.body != `{"applied":true,"id":"t1"}`+"\n" {
		t.Fatalf("transfer: %+v", r)
	}
	for _, nd := range nodes {
		if r := post(t, nd.url+"/bank/transfer", tr); r.status != 200 || r.body != `{"applied":false,"id":"t1"}`+"\n" {
			t.Fatalf("retry through %s: %+v", nd.h.Node(), r)
		}
	}
	if r := post(t, c.url+"/bank/transfer", Transfer{ID: "t2", From: "alice", To: "bob", Amount: 61}); r.status != 409 {
		t.Fatalf("overdraft: %+v", r)
	}
	if r := post(t, b.url+"/bank/alice/deposit", DepositArg{ID: "open-alice", Amount: 100}); r.status != 200 || r.body != `{"applied":false,"balance":60}`+"\n" {
		t.Fatalf("retried deposit: %+v", r)
	}
	al, alOwner := summary(t, c.url, "alice")
	bo, boOwner := summary(t, c.url, "bob")
	if al != (Summary{Balance: 60, Debits: 1, Deposits: 1}) || bo != (Summary{Balance: 40, Credits: 1, Deposits: 1}) {
		t.Fatalf("alice %+v, bob %+v", al, bo)
	}
	if alOwner != a.h.Node() || boOwner != b.h.Node() {
		t.Fatalf("alice answered by %s, bob by %s: want %s and %s", alOwner, boOwner, a.h.Node(), b.h.Node())
	}
}

// TestPendingCreditDeliveredByAlarm: a debit whose credit never came (the
// request was cut short after it) is finished by the paying account's
// alarm, whose method call reaches the payee on another node.
func TestPendingCreditDeliveredByAlarm(t *testing.T) {
	nodes := fleet(t, 2)
	a, b := nodes[0], nodes[1]
	own(t, a, "carol", 10)
	own(t, b, "dave", 0)
	ctx := context.Background()
	if _, err := a.app.debit.Call(ctx, a.app.account("carol"), DebitArg{ID: "cut", To: "dave", Amount: 7}); err != nil {
		t.Fatal(err)
	}
	if s, _ := summary(t, a.url, "carol"); s.Pending != 1 || s.Balance != 3 {
		t.Fatalf("carol after the debit: %+v", s)
	}
	for { // the alarm comes RedeliverAfter later
		s, _ := summary(t, a.url, "carol")
		if s.Pending == 0 {
			break
		}
		if t.Context().Err() != nil {
			t.Fatal("the credit was never redelivered")
		}
		<-afterShortPause()
	}
	if s, _ := summary(t, a.url, "dave"); s != (Summary{Balance: 7, Credits: 1, Deposits: 1}) {
		t.Fatalf("dave: %+v", s)
	}
}

// TestConcurrentTransfersConserveMoney: 24 clients make 10 transfers each
// between 6 accounts spread over three nodes, each through a random node
// and each sent twice (a retry): every answer is 200 or a refusal, no
// money appears or vanishes, every account's record of debits and credits
// matches what the clients saw applied, and nothing stays pending.
func TestConcurrentTransfersConserveMoney(t *testing.T) {
	nodes := fleet(t, 3)
	const accounts, clients, rounds, opening = 6, 24, 10, 1000
	for i := range accounts {
		own(t, nodes[i%len(nodes)], fmt.Sprintf("acct%d", i), opening)
	}
	var mu sync.Mutex
	debits, credits := map[string]int64{}, map[string]int64{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(c), 22))
			for i := range rounds {
				from := rnd.IntN(accounts)
				to := (from + 1 + rnd.IntN(accounts-1)) % accounts
				tr := Transfer{ID: fmt.Sprintf("c%d-%d", c, i), From: fmt.Sprintf("acct%d", from), To: fmt.Sprintf("acct%d", to), Amount: 1 + rnd.Int64N(300)}
				var ok bool
				for range 2 {
					r := post(t, nodes[rnd.IntN(len(nodes))].url+"/bank/transfer", tr)
					switch r.status {
					case 200:
						ok = true
					case 409:
					default:
						t.Errorf("transfer %+v: %+v", tr, r)
					}
				}
				if ok {
					mu.Lock()
					debits[tr.From]++
					credits[tr.To]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	var total int64
	for i := range accounts {
		name := fmt.Sprintf("acct%d", i)
		s, _ := summary(t, nodes[i%len(nodes)].url, name)
		total += s.Balance
		if s.Debits != debits[name] || s.Credits != credits[name] || s.Pending != 0 || s.Balance < 0 {
			t.Errorf("%s: %+v, want %d debits and %d credits, none pending", name, s, debits[name], credits[name])
		}
	}
	if total != accounts*opening {
		t.Fatalf("money: %d, want %d", total, accounts*opening)
	}
}

// afterShortPause paces a wait for something the test cannot be told of.
func afterShortPause() <-chan time.Time { return time.After(50 * time.Millisecond) }
