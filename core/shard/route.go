package shard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
)

// HeaderNotApplied marks an answer that refused a call before running any
// of it (the process is shutting down): a router may run the call
// elsewhere without risking it twice. It is the peer protocol's header, so
// one spelling serves both routers.
const HeaderNotApplied = peer.HeaderNotApplied

// ErrHolderGone: the process a shard's record names could not take the
// call, and none of it ran — its socket refused the connection, it
// answered HeaderNotApplied, or (a SocketPrefix holder) the connection
// ended before it answered 102 Processing. The shard is being let go (a
// restart, most often): the caller may wait for the lock and run the call
// itself.
var ErrHolderGone = errors.New("shard: the holding process is gone or shutting down; the call did not run there")

// DefaultRouteTimeout bounds a routed call, so a holder that hangs gives
// the caller an answer in bounded time.
const DefaultRouteTimeout = 30 * time.Second

// maxRoutedAnswer bounds an answer read back from a holder; the whole
// answer is read before any of it is written, so a holder dying mid-answer
// becomes a *lease.ShardOwnerLostError rather than a truncated reply.
const maxRoutedAnswer = 64 << 20

// Router forwards calls for cells whose shard another process on this host
// holds to that process, over the local socket its holder record names
// ("unix:<path>"). The holder's reply already waited for its output gate,
// so it is final. A Router is safe for concurrent use.
type Router struct {
	// Self names this process in peer.HeaderForwarded, so a routed call is
	// never routed again.
	Self string
	// Timeout bounds each routed call until its answer starts, and a whole
	// answer; a streamed answer is not bounded. Zero means
	// DefaultRouteTimeout.
	Timeout time.Duration
}

// SocketPrefix begins the file name of the socket of a holder whose
// server runs calls through Accepting, and so answers 102 Processing
// before it runs any of a call. Only for such a holder does Forward take
// a connection that ends before that answer as proof that the call did
// not run; a holder on another socket (an older `cellb serve`) keeps the
// old rule, where only a refused connection proves it.
const SocketPrefix = "route-"

// promisesAccepted reports whether the holder at socket path answers 102
// Processing before running a call (see SocketPrefix).
func promisesAccepted(path string) bool {
	return strings.HasPrefix(filepath.Base(path), SocketPrefix)
}

// Accepting wraps a holder's handler for routed calls: it answers 102
// Processing, flushed to the connection, before h runs any of the call.
// A router that saw the connection end without that answer knows the call
// never started here (the holder closed the connection unread, or it
// never accepted it: a connection still queued on a listener that closes
// is reset), so the call may run elsewhere. Clients that do not look for
// it skip a 1xx answer, as HTTP requires.
func Accepting(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusProcessing)
		h.ServeHTTP(w, r)
	})
}

// max1xx bounds the informational answers Forward skips before the final
// one, as net/http's client does.
const max1xx = 5

// Forward replays r (method, path, query, headers, body) against the
// holder at addr, over a connection of its own, and copies its answer to
// w. It returns ErrHolderGone when the call provably did not run there —
// the connection was refused, the holder answered HeaderNotApplied, or a
// holder on a SocketPrefix socket closed the connection before answering
// 102 Processing — and a *lease.ShardOwnerLostError when the holder may
// have run the call but did not answer in full (it went away, or the
// route's timeout passed). Forward writes to w only on success, except
// for a streamed answer (peer.HeaderStreamed), copied through as it comes:
// a holder lost midway leaves w written in part.
func (rt *Router) Forward(ctx context.Context, addr string, w http.ResponseWriter, r *http.Request) error {
	if r.Header.Get(peer.HeaderForwarded) != "" {
		return peer.ErrAlreadyForwarded
	}
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok || path == "" {
		return fmt.Errorf("shard: cannot route to %q (not a unix: address)", addr)
	}
	timeout := rt.Timeout
	if timeout <= 0 {
		timeout = DefaultRouteTimeout
	}
	// The timeout bounds the call until its answer starts, and a whole
	// answer; a streamed answer is bounded only by its own end.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	limit := time.AfterFunc(timeout, cancel)
	defer limit.Stop()
	out, err := peer.Replay(ctx, r, "http://shard-holder", rt.Self)
	if err != nil {
		return err
	}
	out.Close = true // one call per connection: none is sent on one the holder may be closing
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrHolderGone, err)
	}
	defer conn.Close()
	// The timeout (or the caller going away) ends any read or write.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	// Written while the answer is read, as net/http's client does: a
	// holder may answer (a refusal, most often) before it reads the whole
	// request, and whether it accepted the call is only known from what
	// it sent back, so a failed write is not the end.
	werrc := make(chan error, 1)
	go func() { werrc <- out.Write(conn) }()
	br := bufio.NewReader(conn)
	accepted := false
	var resp *http.Response
	for n := 0; ; n++ {
		resp, err = http.ReadResponse(br, out)
		if err != nil || resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if resp.StatusCode == http.StatusProcessing {
			accepted = true
		}
		if n == max1xx {
			err = fmt.Errorf("more than %d informational answers", max1xx)
			break
		}
	}
	if err != nil {
		conn.Close() // ends the write, if it still runs
		if werr := <-werrc; werr != nil && !errors.Is(werr, net.ErrClosed) {
			err = fmt.Errorf("%w (writing the request: %v)", err, werr)
		}
		if !accepted && ctx.Err() == nil && promisesAccepted(path) {
			return fmt.Errorf("%w: the connection ended before it accepted the call: %v", ErrHolderGone, err)
		}
		return rt.lost(addr, err)
	}
	defer resp.Body.Close()
	if resp.Header.Get(HeaderNotApplied) != "" {
		// 503 closing, or 409 owned elsewhere (the record that named
		// the holder was stale): either way nothing ran there.
		return fmt.Errorf("%w: it answered %s", ErrHolderGone, resp.Status)
	}
	if peer.Streamed(resp) {
		// A streamed answer is copied through as it comes (see
		// peer.CopyStreamed), for as long as it lasts.
		if !limit.Stop() {
			return rt.lost(addr, context.DeadlineExceeded)
		}
		if err := peer.CopyStreamed(w, resp); err != nil {
			return rt.lost(addr, err)
		}
		return nil
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxRoutedAnswer+1))
	if err == nil && len(answer) > maxRoutedAnswer {
		err = fmt.Errorf("answer larger than %d bytes", maxRoutedAnswer)
	}
	if err != nil {
		return rt.lost(addr, err)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
	return nil
}

// lost builds the error for a call sent to a holder that did not answer
// in full; the caller, which knows the cell, may fill in Class and ID.
func (rt *Router) lost(addr string, err error) error {
	return &lease.ShardOwnerLostError{Owner: addr, Err: err}
}
