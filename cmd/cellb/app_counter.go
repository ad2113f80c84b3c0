package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
	"github.com/cellb/cellb/core/shard"
)

// The example app that `cellb serve` hosts: one counter cell per name.
//
//	POST /counter/<name>             increment; 200 {"value":N} once durable
//	GET  /counter/<name>             200 {"value":N}
//	POST /counter/<name>/alarm?in=MS set the alarm; when it fires, +1000
//
// Errors answer with the error's message as the body: 409 for a cell owned
// by another node (with the cause when forwarding there failed), 503 for a
// reset object or a refused write, 400 for bad input, 413 for a body over
// 1 MiB that would be forwarded, 502 when the owner went away during a
// forwarded call. Every answer from a cell carries X-Cellb-Node and
// X-Cellb-Epoch, naming the writer that produced it.
//
// Tools outside this project drive this contract: keep it exactly.

// Counter is the counter cell.
type Counter struct {
	st *cell.State
}

const counterKey = "value"

func newCounter(ctx context.Context, st *cell.State) (*Counter, error) {
	return &Counter{st: st}, nil
}

func (c *Counter) value(ctx context.Context) (int64, error) {
	var v int64
	_, err := c.st.KV().GetInto(ctx, counterKey, &v)
	return v, err
}

func (c *Counter) add(ctx context.Context, n int64) (int64, error) {
	v, err := c.value(ctx)
	if err != nil {
		return 0, err
	}
	v += n
	return v, c.st.KV().Put(ctx, counterKey, v)
}

// Alarm adds 1000; its write and the alarm row's deletion commit together.
func (c *Counter) Alarm(ctx context.Context, info cell.AlarmInfo) error {
	_, err := c.add(ctx, 1000)
	return err
}

// counterReply is what a counter call returns through the output gate.
type counterReply struct {
	Value int64
	Alarm int64 // Unix ms of the alarm set, for the alarm route
	Epoch uint64
}

// counterApp serves the contract over a runtime.
type counterApp struct {
	ns      *cell.Namespace[*Counter]
	node    string
	forward forwardFunc
}

// maxNameLen keeps names (and the URLs that carry them) reasonable.
const maxNameLen = 256

func (a *counterApp) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /counter/{name}", a.handle(false, func(ctx context.Context, c *Counter, r *http.Request) (counterReply, error) {
		v, err := c.add(ctx, 1)
		return counterReply{Value: v, Epoch: c.st.Epoch()}, err
	}))
	mux.HandleFunc("GET /counter/{name}", a.handle(false, func(ctx context.Context, c *Counter, r *http.Request) (counterReply, error) {
		v, err := c.value(ctx)
		return counterReply{Value: v, Epoch: c.st.Epoch()}, err
	}))
	mux.HandleFunc("POST /counter/{name}/alarm", a.handle(true, func(ctx context.Context, c *Counter, r *http.Request) (counterReply, error) {
		in, _ := strconv.ParseInt(r.URL.Query().Get("in"), 10, 64)
		at := time.Now().Add(time.Duration(in) * time.Millisecond)
		if err := c.st.SetAlarm(ctx, at); err != nil {
			return counterReply{}, err
		}
		v, err := c.value(ctx)
		return counterReply{Value: v, Alarm: at.UnixMilli(), Epoch: c.st.Epoch()}, err
	}))
}

// badInput is answered with 400.
type badInput struct{ msg string }

func (e badInput) Error() string { return e.msg }

func (a *counterApp) validate(r *http.Request, alarm bool) error {
	name := r.PathValue("name")
	if name == "" || len(name) > maxNameLen {
		return badInput{fmt.Sprintf("counter name must be 1 to %d bytes", maxNameLen)}
	}
	if alarm {
		in := r.URL.Query().Get("in")
		ms, err := strconv.ParseInt(in, 10, 64)
		if err != nil || ms < 0 || ms > 366*24*3600*1000 {
			return badInput{fmt.Sprintf("in must be a whole number of milliseconds from 0 to one year, not %q", in)}
		}
	}
	return nil
}

func (a *counterApp) handle(alarm bool, fn func(ctx context.Context, c *Counter, r *http.Request) (counterReply, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := a.validate(r, alarm); err != nil {
			writeError(w, err)
			return
		}
		stub := a.ns.Get(a.ns.IDFromName(r.PathValue("name")))
		reply, answered, err := callRouted(w, r, nil, a.forward, func() (counterReply, error) {
			return cell.Call(r.Context(), stub, func(ctx context.Context, c *Counter) (counterReply, error) {
				return fn(ctx, c, r)
			})
		})
		if answered {
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("X-Cellb-Node", a.node)
		w.Header().Set("X-Cellb-Epoch", strconv.FormatUint(reply.Epoch, 10))
		w.Header().Set("Content-Type", "application/json")
		body := map[string]int64{"value": reply.Value}
		if reply.Alarm != 0 {
			body["alarm"] = reply.Alarm
		}
		_ = json.NewEncoder(w).Encode(body)
	}
}

// writeError maps an error to the contract's status codes; the body is the
// error's message.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	msg := err.Error()
	var (
		bad      badInput
		oe       *lease.CellOwnedElsewhereError
		broken   *cell.BrokenObjectError
		lapsed   *lease.LeaseLapsedError
		lost     *lease.RecordLostError
		gone     *lease.ShardOwnerLostError
		big      *peer.BodyTooLargeError
		peerGone *peer.OwnerLostError
		fwd      *ForwardError
	)
	switch {
	case errors.As(err, &bad):
		status = http.StatusBadRequest
	case errors.As(err, &big):
		status, msg = http.StatusRequestEntityTooLarge, big.Error()
	case errors.As(err, &peerGone):
		status, msg = http.StatusBadGateway, peerGone.Error()
	case errors.As(err, &fwd):
		// Owned elsewhere, and the owner could not be reached: the cause
		// stays in the message.
		status, msg = http.StatusConflict, fwd.Error()
	case errors.As(err, &oe):
		// The protocol's own wording, without the runtime's wrapping.
		status, msg = http.StatusConflict, oe.Error()
	case errors.As(err, &lapsed):
		status, msg = http.StatusServiceUnavailable, lapsed.Error()
	case errors.As(err, &lost):
		status, msg = http.StatusServiceUnavailable, lost.Error()
	case errors.As(err, &gone):
		status, msg = http.StatusBadGateway, gone.Error()
	case errors.As(err, &broken):
		status, msg = http.StatusServiceUnavailable, broken.Error()
	case errors.Is(err, cell.ErrClosed):
		// Refused before it ran: another process may run it instead.
		status = http.StatusServiceUnavailable
		w.Header().Set(shard.HeaderNotApplied, "closing")
	case errors.Is(err, context.Canceled):
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}
