// Command faultproxy is an HTTP reverse proxy that puts the faults of a
// real bucket between CellB nodes and an S3-compatible server (versitygw in
// .ci/run): latency on every request, 500s answered without forwarding,
// PUTs and DELETEs forwarded (so applied) and then answered 500 or with a
// reset connection, and requests held before they are forwarded. The
// history checker of cmd/cellb runs it under chaos; benchmarks run it with
// latency alone, as a real S3 round trip would add:
//
//	GOWORK=off go run ./scripts/faultproxy/main.go -target http://127.0.0.1:17070 -latency 10ms
//
// It prints "listening on http://127.0.0.1:PORT" on stdout once it serves;
// point the nodes at that address (s3://bucket/prefix?endpoint=...). The
// Host header is forwarded as the client sent it, so SigV4 signatures made
// for the proxy's address still verify at the server. GET
// /_faultproxy/stats answers what was injected so far, as JSON (no S3
// bucket is named "_faultproxy": underscores are not allowed in bucket
// names); the same counts go to stderr when it stops (SIGINT, SIGTERM).
//
// Standard library only, so it runs without the workspace. Faults are drawn
// from a seeded generator (-seed); the order in which requests arrive still
// varies from run to run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// faults is what the proxy injects. Probabilities are in [0, 1] and drawn
// once per request, in this order: fail, then (PUT and DELETE only)
// fail-after-apply, reset-after-apply, then stall.
type faults struct {
	Latency time.Duration // added to every request before it is forwarded
	Jitter  time.Duration // plus a uniform extra in [0, Jitter)
	// Fail answers 500 without forwarding: nothing was applied.
	Fail float64
	// FailAfterApply forwards a PUT or DELETE, waits for the server's
	// answer, discards it and answers 500: the write was applied, the
	// client is told it failed.
	FailAfterApply float64
	// ResetAfterApply forwards a PUT or DELETE, waits for the server's
	// answer and closes the connection without answering.
	ResetAfterApply float64
	// Stall holds a request for StallFor before forwarding it (a slow
	// request, which a client with a deadline gives up on).
	Stall    float64
	StallFor time.Duration
}

// stats counts what the proxy did.
type stats struct {
	Requests         int64 `json:"requests"`
	Forwarded        int64 `json:"forwarded"`
	Failed           int64 `json:"failed"`
	FailedAfterApply int64 `json:"failed_after_apply"`
	ResetAfterApply  int64 `json:"reset_after_apply"`
	Stalled          int64 `json:"stalled"`
	UpstreamErrors   int64 `json:"upstream_errors"`
}

// plan is the fault one request gets.
type plan int

const (
	planForward plan = iota
	planFail
	planFailAfterApply
	planResetAfterApply
)

type planKey struct{}

// errInjected marks an answer the proxy discards on purpose.
var errInjected = errors.New("faultproxy: answer discarded")

type proxy struct {
	f     faults
	rp    *httputil.ReverseProxy
	mu    sync.Mutex
	rng   *rand.Rand
	stats stats
}

func newProxy(target *url.URL, f faults, seed uint64) *proxy {
	p := &proxy{f: f, rng: rand.New(rand.NewPCG(seed, seed^0x5bd1e995))}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// SigV4 signs the Host header: keep the one the client signed.
			r.Out.Host = r.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			pl, _ := resp.Request.Context().Value(planKey{}).(plan)
			if pl == planFailAfterApply || pl == planResetAfterApply {
				// The server answered: the write is applied.
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return errInjected
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			pl, _ := r.Context().Value(planKey{}).(plan)
			switch {
			case errors.Is(err, errInjected) && pl == planResetAfterApply:
				p.count(func(s *stats) { s.ResetAfterApply++ })
				// Closes the connection without an answer.
				panic(http.ErrAbortHandler)
			case errors.Is(err, errInjected):
				p.count(func(s *stats) { s.FailedAfterApply++ })
				s3Error(w, "the write was applied, then answered 500 by faultproxy")
			default:
				p.count(func(s *stats) { s.UpstreamErrors++ })
				http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
			}
		},
	}
	return p
}

func (p *proxy) count(f func(*stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// decide draws the request's fault and delay; the draws are the same in
// number for every request, so one probability does not shift the others.
func (p *proxy) decide(method string) (plan, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	uFail, uApply, uReset, uStall, uJitter := p.rng.Float64(), p.rng.Float64(), p.rng.Float64(), p.rng.Float64(), p.rng.Float64()
	delay := p.f.Latency
	if p.f.Jitter > 0 {
		delay += time.Duration(uJitter * float64(p.f.Jitter))
	}
	write := method == http.MethodPut || method == http.MethodDelete
	pl := planForward
	switch {
	case uFail < p.f.Fail:
		pl = planFail
	case write && uApply < p.f.FailAfterApply:
		pl = planFailAfterApply
	case write && uReset < p.f.ResetAfterApply:
		pl = planResetAfterApply
	}
	if pl != planFail && uStall < p.f.Stall {
		delay += p.f.StallFor
		p.stats.Stalled++
	}
	return pl, delay
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_faultproxy/stats" {
		p.mu.Lock()
		s := p.stats
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
		return
	}
	pl, delay := p.decide(r.Method)
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if pl == planFail {
		p.count(func(s *stats) { s.Failed++ })
		s3Error(w, "injected by faultproxy; nothing was forwarded")
		return
	}
	p.count(func(s *stats) { s.Forwarded++ })
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), planKey{}, pl)))
}

// s3Error answers 500 with an S3 error document, as the server would.
func s3Error(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusInternalServerError)
	fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code><Message>%s</Message></Error>\n", msg)
}

func main() {
	var f faults
	listen := flag.String("listen", "127.0.0.1:0", "`address` to listen on")
	target := flag.String("target", "", "`URL` of the server to forward to (required)")
	seed := flag.Uint64("seed", 1, "seed of the fault generator")
	flag.DurationVar(&f.Latency, "latency", 0, "added to every request")
	flag.DurationVar(&f.Jitter, "jitter", 0, "plus a uniform random extra below this")
	flag.Float64Var(&f.Fail, "fail", 0, "fraction of requests answered 500 without forwarding")
	flag.Float64Var(&f.FailAfterApply, "fail-after-apply", 0, "fraction of PUTs and DELETEs forwarded, then answered 500")
	flag.Float64Var(&f.ResetAfterApply, "reset-after-apply", 0, "fraction of PUTs and DELETEs forwarded, then answered by closing the connection")
	flag.Float64Var(&f.Stall, "stall", 0, "fraction of requests held for -stall-for before forwarding")
	flag.DurationVar(&f.StallFor, "stall-for", 5*time.Second, "how long a stalled request is held")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		fmt.Fprintf(os.Stderr, "faultproxy: -target must be a URL such as http://127.0.0.1:17070 (got %q)\n", *target)
		os.Exit(2)
	}
	for name, v := range map[string]float64{"fail": f.Fail, "fail-after-apply": f.FailAfterApply, "reset-after-apply": f.ResetAfterApply, "stall": f.Stall} {
		if v < 0 || v > 1 {
			fmt.Fprintf(os.Stderr, "faultproxy: -%s must be between 0 and 1 (got %v)\n", name, v)
			os.Exit(2)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "faultproxy: %v\n", err)
		os.Exit(1)
	}
	p := newProxy(u, f, *seed)
	srv := &http.Server{Handler: p, ErrorLog: log.New(io.Discard, "", 0)}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "faultproxy: %v\n", err)
		os.Exit(1)
	}
	p.mu.Lock()
	b, _ := json.Marshal(p.stats)
	p.mu.Unlock()
	fmt.Fprintf(os.Stderr, "faultproxy: %s\n", b)
}
