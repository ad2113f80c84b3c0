package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
)

// HeaderNotApplied marks an answer that refused a call before running any
// of it (the process is shutting down): a router may run the call
// elsewhere without risking it twice.
const HeaderNotApplied = "X-Cellb-Not-Applied"

// ErrHolderGone: the process a shard's record names could not take the
// call, and none of it ran — its socket refused the connection, or it
// answered HeaderNotApplied. The shard is being let go (a restart, most
// often): the caller may wait for the lock and run the call itself.
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
	// Timeout bounds each routed call; zero means DefaultRouteTimeout.
	Timeout time.Duration
}

// Forward replays r (method, path, query, headers, body) against the
// holder at addr and copies its answer to w. It returns ErrHolderGone when
// the call did not run there, and a *lease.ShardOwnerLostError when the
// holder went away after the call was sent. Forward writes to w only on
// success.
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
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := peer.Replay(ctx, r, "http://shard-holder", rt.Self)
	if err != nil {
		return err
	}
	var dialed atomic.Bool
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
			dialed.Store(err == nil)
			return c, err
		},
		DisableKeepAlives: true,
	}}
	resp, err := client.Do(out)
	if err != nil {
		if !dialed.Load() {
			return fmt.Errorf("%w: %v", ErrHolderGone, err)
		}
		return rt.lost(addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(HeaderNotApplied) != "" {
		return fmt.Errorf("%w: it answered %s", ErrHolderGone, resp.Status)
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
