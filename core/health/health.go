// Package health is a node's admin endpoints: /healthz (the process is
// up), /readyz (the node serves) and /metrics (whatever exposition the
// program wires in, such as Prometheus text). It knows nothing of metrics
// formats or of the host: the program hands it a metrics handler and,
// once the node is up, the node's readiness. cmd/cellb serve --admin-listen
// serves it; docs/metrics.md describes the endpoints.
package health

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Readiness is what /readyz asks: nil while the node serves, otherwise
// why it does not. core/host's *Host implements it.
type Readiness interface {
	Ready() error
}

// Admin serves the admin endpoints. It is safe for concurrent use.
type Admin struct {
	metrics http.Handler
	ready   atomic.Pointer[readiness]
	mux     *http.ServeMux
}

type readiness struct{ r Readiness }

// New makes an Admin that serves metrics (nil: /metrics answers 404) and
// is not ready until SetReady.
func New(metrics http.Handler) *Admin {
	a := &Admin{metrics: metrics, mux: http.NewServeMux()}
	a.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusOK, "ok")
	})
	a.mux.HandleFunc("GET /readyz", a.readyz)
	if metrics != nil {
		a.mux.Handle("GET /metrics", metrics)
	}
	return a
}

// SetReady hands over the running node: from now on /readyz answers 200
// while r.Ready() is nil. Call it once the node is up (after host.New
// returned: the start-up probe and the fleet join are done). Before it,
// /readyz answers 503 "starting".
func (a *Admin) SetReady(r Readiness) { a.ready.Store(&readiness{r}) }

// ServeHTTP serves GET /healthz, /readyz and /metrics.
func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

func (a *Admin) readyz(w http.ResponseWriter, _ *http.Request) {
	rd := a.ready.Load()
	if rd == nil || rd.r == nil {
		text(w, http.StatusServiceUnavailable, "not ready: starting")
		return
	}
	if err := rd.r.Ready(); err != nil {
		text(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
		return
	}
	text(w, http.StatusOK, "ready")
}

func text(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write([]byte(body + "\n"))
}

// Server is an Admin served on a listener of its own.
type Server struct {
	*Admin
	ln  net.Listener
	srv *http.Server
}

// Listen serves a new Admin (see New) on addr at once, so /healthz
// answers and /readyz says "starting" while the node starts. A listener
// that fails later is reported to logger.
func Listen(addr string, metrics http.Handler, logger *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Admin: New(metrics), ln: ln}
	s.srv = &http.Server{Handler: s.Admin, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) && logger != nil {
			logger.Error("admin listener failed", "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the endpoints are served on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops serving, letting requests in flight finish until ctx ends.
// Close the node first: until then /readyz answers 503 to say the node is
// going away.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }
