package peer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Forwarder sends a call to the node that owns its cell.
type Forwarder struct {
	Key    []byte
	Self   string // this node's id, recorded in HeaderForwarded
	Client *http.Client
	Now    func() time.Time
}

// ErrAlreadyForwarded: the call came from another node already; it is not
// forwarded again.
var ErrAlreadyForwarded = fmt.Errorf("the call was already forwarded once")

// Forward replays r (method, path, query, headers, body) against the owner
// at addr ("host:port") and copies the owner's answer to w. The owner's
// reply already waited for its output gate, so it is final.
func (f *Forwarder) Forward(ctx context.Context, addr string, w http.ResponseWriter, r *http.Request) error {
	if r.Header.Get(HeaderForwarded) != "" {
		return ErrAlreadyForwarded
	}
	out, err := Replay(ctx, r, "http://"+addr, f.Self)
	if err != nil {
		return err
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	if err := Sign(out, f.Key, now()); err != nil {
		return err
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(out)
	if err != nil {
		return fmt.Errorf("forward to the owner at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, err = io.Copy(w, resp.Body)
	return err
}

// Replay copies r (method, path, query, headers, body) into a request to
// base (scheme and host) marked as forwarded by self: the one hop a
// forwarded call is allowed.
func Replay(ctx context.Context, r *http.Request, base, self string) (*http.Request, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		body = b
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
