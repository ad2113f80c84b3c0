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

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/peererr"
)

// Headers of a signed request. Every one of them except the signature is
// covered by it.
const (
	HeaderTime  = "X-Cellb-Peer-Time"  // Unix ms at signing
	HeaderNonce = "X-Cellb-Peer-Nonce" // 32 random hex
	// HeaderNode and HeaderIncarnation name the destination: its node id
	// and the incarnation its node lease publishes
	// (ownership_index_generation). Another node, or the same node after
	// a restart, refuses the request.
	HeaderNode        = "X-Cellb-Peer-Node"
	HeaderIncarnation = "X-Cellb-Peer-Incarnation"
	// HeaderBodyLength and HeaderBodySHA256 describe the body, so the
	// receiver checks the signature before reading a byte of it.
	HeaderBodyLength = "X-Cellb-Peer-Body-Length"
	HeaderBodySHA256 = "X-Cellb-Peer-Body-Sha256"
	HeaderSignature  = "X-Cellb-Peer-Signature"
	// HeaderForwarded marks a call that was already forwarded once, so a
	// stale view of ownership cannot bounce a call around the fleet.
	HeaderForwarded = "X-Cellb-Forwarded-By"
	// HeaderNotApplied marks an answer that refused a call before running
	// any of it: the node is shutting down, or the request was signed for
	// another node or incarnation (the sender's view of the owner is
	// stale). The sender may look up the owner again and send the call
	// there, or run it itself, without risking it twice. It is
	// core/peererr's, so that core/httperr can set it.
	HeaderNotApplied = peererr.HeaderNotApplied
)

// MaxSkew is how far a request's timestamp may be from the receiver's clock.
const MaxSkew = 30 * time.Second

// MaxBody is the largest body a call forwarded between nodes (or between
// processes on one host) may carry. Forwarding a larger one answers 413;
// a receiver refuses a larger one before reading it.
const MaxBody = 1 << 20

// ErrUnauthenticated is matched by every verification failure (*AuthError).
var ErrUnauthenticated = errors.New("peer request not authenticated")

// AuthError says why a peer request was refused (answered 401).
// errors.Is(err, ErrUnauthenticated) holds for every one.
type AuthError struct {
	Reason string
	// Misdirected: the request is genuine but signed for another node or
	// another incarnation of this one. The answer carries
	// HeaderNotApplied, so a sender with a stale view looks again.
	Misdirected bool
}

func (e *AuthError) Error() string { return ErrUnauthenticated.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrUnauthenticated) true.
func (e *AuthError) Is(target error) bool { return target == ErrUnauthenticated }

func authErr(format string, args ...any) error {
	return &AuthError{Reason: fmt.Sprintf(format, args...)}
}

// Target is the node a request is signed for.
type Target struct {
	Node        string // the destination node's id
	Incarnation string // its incarnation, as its node lease publishes it
	Addr        string // its peer address, host:port
}

// mac covers everything the receiver acts on except the body itself, which
// it covers by length and hash: the receiver verifies it before reading
// the body.
func mac(key []byte, method, uri, ts, nonce, node, incarnation, forwardedBy, length, bodyHash string) []byte {
	h := hmac.New(sha256.New, key)
	for _, part := range []string{"cellb-peer-v2", method, uri, ts, nonce, node, incarnation, forwardedBy, length, bodyHash} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// Sign makes req, whose body is body, a request for to signed at now: it
// sets the body and the signed headers.
func Sign(req *http.Request, body []byte, key []byte, to Target, now time.Time) error {
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if len(body) == 0 {
		// Sent with Content-Length: 0, not chunked: the receiver compares
		// the framing with the signed length.
		req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	req.ContentLength = int64(len(body))
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return err
	}
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	nonce := hex.EncodeToString(n[:])
	sum := sha256.Sum256(body)
	bh := hex.EncodeToString(sum[:])
	length := strconv.Itoa(len(body))
	req.Header.Set(HeaderTime, ts)
	req.Header.Set(HeaderNonce, nonce)
	req.Header.Set(HeaderNode, to.Node)
	req.Header.Set(HeaderIncarnation, to.Incarnation)
	req.Header.Set(HeaderBodyLength, length)
	req.Header.Set(HeaderBodySHA256, bh)
	sig := mac(key, req.Method, req.URL.RequestURI(), ts, nonce, to.Node, to.Incarnation, req.Header.Get(HeaderForwarded), length, bh)
	req.Header.Set(HeaderSignature, hex.EncodeToString(sig))
	return nil
}

// Signed is what a verified set of headers promises about the body.
type Signed struct {
	Nonce  string
	Length int64
	SHA256 []byte
}

// VerifyHeaders checks req's signature for the node self at incarnation
// at time now, from its headers alone: it reads no body. A request signed
// for another node or incarnation gets an *AuthError with Misdirected set.
func VerifyHeaders(req *http.Request, key []byte, self, incarnation string, now time.Time) (Signed, error) {
	h := req.Header
	ts, nonce, sig := h.Get(HeaderTime), h.Get(HeaderNonce), h.Get(HeaderSignature)
	length, bh := h.Get(HeaderBodyLength), h.Get(HeaderBodySHA256)
	if ts == "" || nonce == "" || sig == "" || length == "" || bh == "" || h.Get(HeaderNode) == "" {
		return Signed{}, authErr("missing signature headers")
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return Signed{}, authErr("bad timestamp")
	}
	n, err := strconv.ParseInt(length, 10, 64)
	if err != nil || n < 0 {
		return Signed{}, authErr("bad body length")
	}
	sum, err := hex.DecodeString(bh)
	if err != nil || len(sum) != sha256.Size {
		return Signed{}, authErr("bad body hash")
	}
	want, err := hex.DecodeString(sig)
	if err != nil {
		return Signed{}, authErr("bad signature encoding")
	}
	node, inc := h.Get(HeaderNode), h.Get(HeaderIncarnation)
	if !hmac.Equal(want, mac(key, req.Method, req.URL.RequestURI(), ts, nonce, node, inc, h.Get(HeaderForwarded), length, bh)) {
		return Signed{}, authErr("signature does not match")
	}
	if d := now.Sub(time.UnixMilli(ms)); d > MaxSkew || d < -MaxSkew {
		return Signed{}, authErr("timestamp %v away from this node's clock (at most %v)", d.Round(time.Second), MaxSkew)
	}
	if node != self {
		return Signed{}, &AuthError{Misdirected: true, Reason: fmt.Sprintf("signed for node %q, this is node %q", node, self)}
	}
	if inc != incarnation {
		return Signed{}, &AuthError{Misdirected: true, Reason: fmt.Sprintf("signed for another incarnation of node %q (it restarted since)", self)}
	}
	return Signed{Nonce: nonce, Length: n, SHA256: sum}, nil
}

// Receiver admits signed peer requests for one incarnation of one node.
// It checks the signature from the headers before reading any body, then
// reads at most the signed length, hashing it, and refuses a body that
// differs. Each nonce is admitted once (the timestamp window bounds how
// long one is remembered); a restart starts a new incarnation, which
// refuses every request signed for the previous one, so no memory needs
// to survive it. A Receiver is safe for concurrent use; do not copy it.
type Receiver struct {
	Key []byte
	// Node and Incarnation name this node (fleet.Node.ID and
	// fleet.Node.Generation).
	Node, Incarnation string
	// MaxBody bounds a body; zero means MaxBody.
	MaxBody int64
	Clock   clock.Clock

	mu    sync.Mutex
	seen  map[string]struct{}
	order []seenNonce // in arrival order, so expiry is a pop from the front
}

type seenNonce struct {
	nonce   string
	expires time.Time
}

// Handler wraps next so that only signed requests reach it, each at most
// once, with their body verified: missing or bad signatures, a request
// for another node or incarnation, a replayed nonce, a stale timestamp
// and a body that does not match the signature get 401; a body over the
// limit gets 413. None of these reads the body.
func (rc *Receiver) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rc.Admit(r); err != nil {
			status := http.StatusUnauthorized
			var big *BodyTooLargeError
			var ae *AuthError
			switch {
			case errors.As(err, &big):
				status = http.StatusRequestEntityTooLarge
			case errors.As(err, &ae) && ae.Misdirected:
				w.Header().Set(HeaderNotApplied, "misdirected")
			}
			// The body is not read: close the connection after answering
			// rather than drain it.
			w.Header().Set("Connection", "close")
			http.Error(w, err.Error(), status)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Admit verifies r as Handler does and, on success, replaces r.Body with
// the verified body. On failure r.Body was read only as far as the signed
// length, and only when the headers verified.
func (rc *Receiver) Admit(r *http.Request) error {
	clk := clock.Or(rc.Clock)
	now := clk.Now()
	signed, err := VerifyHeaders(r, rc.Key, rc.Node, rc.Incarnation, now)
	if err != nil {
		return err
	}
	limit := rc.MaxBody
	if limit <= 0 {
		limit = MaxBody
	}
	if signed.Length > limit {
		return &BodyTooLargeError{Limit: limit}
	}
	if r.ContentLength != signed.Length {
		return authErr("body length %d differs from the signed length %d", r.ContentLength, signed.Length)
	}
	if !rc.remember(signed.Nonce, now) {
		return authErr("replayed request (nonce already seen)")
	}
	body := make([]byte, signed.Length)
	if r.Body != nil {
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return authErr("body shorter than its signed length: %v", err)
		}
		r.Body.Close()
	} else if signed.Length > 0 {
		return authErr("body shorter than its signed length")
	}
	if sum := sha256.Sum256(body); !hmac.Equal(sum[:], signed.SHA256) {
		return authErr("body does not match its signed hash")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return nil
}

// remember records nonce as seen at now; false if it was seen already.
// A nonce is kept until a request carrying it can no longer pass the
// timestamp check.
func (rc *Receiver) remember(nonce string, now time.Time) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for len(rc.order) > 0 && now.After(rc.order[0].expires) {
		delete(rc.seen, rc.order[0].nonce)
		rc.order = rc.order[1:]
	}
	if rc.seen == nil {
		rc.seen = map[string]struct{}{}
	}
	if _, dup := rc.seen[nonce]; dup {
		return false
	}
	rc.seen[nonce] = struct{}{}
	rc.order = append(rc.order, seenNonce{nonce: nonce, expires: now.Add(2 * MaxSkew)})
	return true
}
