package peer

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Headers of a signed request.
const (
	HeaderTime      = "X-Cellb-Peer-Time"
	HeaderNonce     = "X-Cellb-Peer-Nonce"
	HeaderSignature = "X-Cellb-Peer-Signature"
	// HeaderForwarded marks a call that was already forwarded once, so a
	// stale view of ownership cannot bounce a call around the fleet.
	HeaderForwarded = "X-Cellb-Forwarded-By"
)

// MaxSkew is how far a request's timestamp may be from the receiver's clock.
const MaxSkew = 30 * time.Second

// ErrUnauthenticated is matched by every verification failure.
var ErrUnauthenticated = errors.New("peer request not authenticated")

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func mac(key []byte, method, uri, ts, nonce string, bodyHash []byte) []byte {
	h := hmac.New(sha256.New, key)
	for _, part := range []string{"cellb-peer-v1", method, uri, ts, nonce} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(bodyHash)
	return h.Sum(nil)
}

// Sign signs req (whose body it reads and replaces) at time now.
func Sign(req *http.Request, key []byte, now time.Time) error {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return err
		}
		req.Body.Close()
		body = b
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return err
	}
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	nonce := hex.EncodeToString(n[:])
	bh := sha256.Sum256(body)
	req.Header.Set(HeaderTime, ts)
	req.Header.Set(HeaderNonce, nonce)
	req.Header.Set(HeaderSignature, hex.EncodeToString(mac(key, req.Method, req.URL.RequestURI(), ts, nonce, bh[:])))
	return nil
}

// Verify checks a signed request at time now, reading (and replacing) its
// body.
func Verify(req *http.Request, key []byte, now time.Time) error {
	ts, nonce, sig := req.Header.Get(HeaderTime), req.Header.Get(HeaderNonce), req.Header.Get(HeaderSignature)
	if ts == "" || nonce == "" || sig == "" {
		return fmt.Errorf("%w: missing signature headers", ErrUnauthenticated)
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad timestamp", ErrUnauthenticated)
	}
	if d := now.Sub(time.UnixMilli(ms)); d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("%w: timestamp %v away from this node's clock", ErrUnauthenticated, d.Round(time.Second))
	}
	want, err := hex.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("%w: bad signature encoding", ErrUnauthenticated)
	}
	var body []byte
	if req.Body != nil {
		body, err = io.ReadAll(io.LimitReader(req.Body, 64<<20))
		if err != nil {
			return err
		}
		req.Body.Close()
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	bh := sha256.Sum256(body)
	if !hmac.Equal(want, mac(key, req.Method, req.URL.RequestURI(), ts, nonce, bh[:])) {
		return fmt.Errorf("%w: signature does not match", ErrUnauthenticated)
	}
	return nil
}

// Require wraps next so that only signed requests reach it, each at most
// once (a nonce seen within the skew window is a replay); others get 401.
func Require(key []byte, now func() time.Time, next http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[string]time.Time{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := now()
		if err := Verify(r, key, t); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		nonce := r.Header.Get(HeaderNonce)
		mu.Lock()
		if _, dup := seen[nonce]; dup {
			mu.Unlock()
			http.Error(w, ErrUnauthenticated.Error()+": replayed request", http.StatusUnauthorized)
			return
		}
		seen[nonce] = t.Add(2 * MaxSkew)
		if len(seen) > 4096 {
			for n, exp := range seen {
				if t.After(exp) {
					delete(seen, n)
				}
			}
		}
		mu.Unlock()
		next.ServeHTTP(w, r)
	})
}
