package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/clock"
)

// Forwarder sends a call to the node that owns its cell.
type Forwarder struct {
	Key    []byte
	Self   string // this node's id, recorded in HeaderForwarded
	Client *http.Client
	Clock  clock.Clock
	// Timeout, when > 0, bounds a call until its answer starts, and a
	// whole answer; a streamed answer (HeaderStreamed) is bounded only by
	// its end. (Client.Timeout would cut every stream at that age.)
	Timeout time.Duration
}

// ErrAlreadyForwarded: the call came from another node already; it is not
// forwarded again.
var ErrAlreadyForwarded = fmt.Errorf("the call was already forwarded once")

// ErrNotApplied is matched by every *NotAppliedError.
var ErrNotApplied = errors.New("the forwarded call did not run")

// NotAppliedError: the owner did not run the call, provably — its request
// was never completely sent (a node refuses a request whose body is
// shorter than signed), or the owner refused it before running it
// (HeaderNotApplied: shutting down, or signed for another incarnation).
// The caller may look up the owner again and retry.
type NotAppliedError struct {
	Addr   string
	Reason string
}

func (e *NotAppliedError) Error() string {
	return fmt.Sprintf("the owner at %s did not run the call: %s", e.Addr, e.Reason)
}

// Is makes errors.Is(err, ErrNotApplied) true.
func (e *NotAppliedError) Is(target error) bool { return target == ErrNotApplied }

// RefusedError: the owner refused to authenticate the forwarded call (it
// answered 401 without HeaderNotApplied). Nothing ran.
type RefusedError struct {
	Addr    string
	Message string // the owner's answer
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the owner at %s refused the forwarded call: %s", e.Addr, e.Message)
}

// errServerClosedIdle is the text of net/http's error for a kept-alive
// connection the server closed before the request was written to it (the
// error value is not exported).
const errServerClosedIdle = "http: server closed idle connection"

// maxAnswer bounds an owner's answer; it is read whole before any of it is
// written, so an owner lost mid-answer never yields a truncated reply. A
// streamed answer (HeaderStreamed) is the exception: it is copied through.
const maxAnswer = 64 << 20

// Forward sends r (method, path, query, headers, body of at most MaxBody
// bytes) to the owner to, signed for that node and incarnation, and copies
// the owner's answer to w. The owner's reply already waited for its output
// gate, so it is final. On error w is untouched: *BodyTooLargeError (before
// anything is sent), *NotAppliedError, *RefusedError or *OwnerLostError —
// except for a streamed answer (HeaderStreamed), copied to w chunk by
// chunk as it comes: an owner lost midway returns *OwnerLostError with w
// written in part, and the caller must end w's response as broken.
func (f *Forwarder) Forward(ctx context.Context, to Target, w http.ResponseWriter, r *http.Request) error {
	if r.Header.Get(HeaderForwarded) != "" {
		return ErrAlreadyForwarded
	}
	body, err := ReadBody(r, MaxBody)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var limit *time.Timer
	if f.Timeout > 0 {
		// Real time, as http.Client.Timeout was: a test's fake clock
		// moving hours ahead must not cancel a call in flight.
		limit = time.AfterFunc(f.Timeout, cancel)
		defer limit.Stop()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	out, err := Replay(ctx, r, "http://"+to.Addr, f.Self)
	if err != nil {
		return err
	}
	if err := Sign(out, body, f.Key, to, clock.Or(f.Clock).Now()); err != nil {
		return err
	}
	// Whether the whole request went out: the owner runs nothing before it
	// has read the whole signed body.
	var sent atomic.Bool
	out = out.WithContext(httptrace.WithClientTrace(out.Context(), &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				sent.Store(true)
			}
		},
	}))
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(out)
	if err != nil {
		if !sent.Load() || dialFailed(err) {
			// Never written in full, or the last attempt could not even
			// connect (net/http tries a request again only when it wrote
			// none of it).
			return &NotAppliedError{Addr: to.Addr, Reason: fmt.Sprintf("the request was not sent: %v", err)}
		}
		if strings.Contains(err.Error(), errServerClosedIdle) {
			// net/http saw the owner close the kept-alive connection
			// before this request was handed to it (a node shutting
			// down closes its idle connections): the owner never read it.
			return &NotAppliedError{Addr: to.Addr, Reason: fmt.Sprintf("the owner closed the connection before reading the request: %v", err)}
		}
		return &OwnerLostError{Addr: to.Addr, Err: err}
	}
	defer resp.Body.Close()
	if Streamed(resp) && resp.StatusCode != http.StatusUnauthorized {
		// A streamed answer is copied through as it comes, for as long as
		// it lasts: the owner's cell passed its output gate for each chunk.
		if limit != nil && !limit.Stop() {
			return &OwnerLostError{Addr: to.Addr, Err: context.DeadlineExceeded}
		}
		if err := CopyStreamed(w, resp); err != nil {
			return &OwnerLostError{Addr: to.Addr, Err: err}
		}
		return nil
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err == nil && len(answer) > maxAnswer {
		err = fmt.Errorf("answer larger than %d bytes", maxAnswer)
	}
	if err != nil {
		return &OwnerLostError{Addr: to.Addr, Err: err}
	}
	if why := resp.Header.Get(HeaderNotApplied); why != "" {
		return &NotAppliedError{Addr: to.Addr, Reason: fmt.Sprintf("it answered %s (%s): %s", resp.Status, why, firstLine(answer))}
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return &RefusedError{Addr: to.Addr, Message: firstLine(answer)}
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

// dialFailed reports whether err is a failure to connect.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 512 {
		s = s[:512]
	}
	return strings.TrimSpace(s)
}

// ReadBody reads r's body, at most limit bytes: a longer one (by its
// Content-Length, or once limit+1 bytes were read) is a
// *BodyTooLargeError, and no more of it is read.
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, &BodyTooLargeError{Limit: limit}
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &BodyTooLargeError{Limit: limit}
	}
	return b, nil
}

// Replay copies r (method, path, query, headers, body of at most MaxBody
// bytes) into a request to base (scheme and host) marked as forwarded by
// self: the one hop a forwarded call is allowed. A larger body is a
// *BodyTooLargeError, read no further than the limit.
func Replay(ctx context.Context, r *http.Request, base, self string) (*http.Request, error) {
	body, err := ReadBody(r, MaxBody)
	if err != nil {
		return nil, err
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, base+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			out.Header.Add(k, v)
		}
	}
	out.Header.Set(HeaderForwarded, self)
	return out, nil
}
