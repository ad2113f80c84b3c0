package cell

import (
	"context"
	"io"
	"net/http"

	"github.com/cellb/cellb/core/internal/httpbuf"
)

// StreamChunk is the most of a response a Fetch keeps in memory before it
// goes out: a handler's writes past it are sent as a chunk, as an
// explicit Flush sends what is buffered. Either way the chunk leaves only
// once every commit made before it is durable.
const StreamChunk = 64 << 10

// serveHTTP runs req through the object's ServeHTTP inside one event and
// returns the answer: whole, once the handler returned and its commits are
// durable, when the handler never flushed and wrote at most StreamChunk
// bytes; streamed otherwise. A streamed answer starts at the first flush;
// each flush (http.Flusher, or a write past StreamChunk) is a yield of the
// handler's turn (its writes so far commit, other events may run), and its
// bytes go out once every commit made before them is durable (the output
// gate). The rest goes out when the handler returned and its last commit
// is durable; a failure after the start (a reset, a failed commit) ends
// the body with that error. The caller's own turn was yielded already
// (fetchHere): ctx carries no event of the caller's.
func (rt *Runtime) serveHTTP(ctx context.Context, cls *class, id ID, req *http.Request) (*http.Response, error) {
	st := httpbuf.NewStream()
	st.Limit, st.Sniff = StreamChunk, true
	done := make(chan error, 1)
	go func() {
		err := rt.dispatch(ctx, cls, id, func(ctx context.Context, obj any) error {
			h, ok := obj.(http.Handler)
			if !ok {
				return ErrNotHTTPHandler
			}
			st.Gate = func(send func() error) error {
				return yield(ctx, func(context.Context) error { return send() })
			}
			h.ServeHTTP(st, req.WithContext(ctx))
			return nil
		})
		st.Finish(err)
		done <- err
	}()
	select {
	case <-st.Head():
		return st.StreamResponse(req), nil
	case err := <-done:
		if st.Started() {
			return st.StreamResponse(req), nil
		}
		if err == nil {
			err = st.Err() // a flush failed: what is left is not the answer
		}
		if err != nil {
			return nil, err
		}
		return st.Response(req), nil
	}
}

// copyStreamed copies a streamed body to w, flushing each chunk as it
// comes. A body that fails after the start aborts w's response
// (http.ErrAbortHandler), so a truncated stream never looks complete.
func copyStreamed(w http.ResponseWriter, body io.Reader) {
	// Flushed before the first byte: a host's writer for a forwarded
	// request then marks the answer as streamed for the node that sent it.
	_ = http.NewResponseController(w).Flush()
	if err := httpbuf.CopyFlushed(w, body); err != nil {
		panic(http.ErrAbortHandler)
	}
}

// noEvent is ctx without the event of the handler it belongs to.
func noEvent(ctx context.Context) context.Context {
	return context.WithValue(ctx, eventKey{}, (*event)(nil))
}
