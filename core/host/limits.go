package host

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cellb/cellb/core/httperr"
)

// Limits bound what one client may hold of a server the host starts (the
// public listener, the peer listener, the local socket): a zero field
// takes its default (DefaultLimits). Handler applies the path check and
// MaxBodyBytes to every request whichever server serves it; the timeouts
// and MaxHeaderBytes apply to the host's own servers only (an embedder
// serving Handler on its own server sets those on it).
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included: a client
	// that sends its headers and then never its body is cut off after it.
	ReadTimeout time.Duration
	// IdleTimeout bounds how long a keep-alive connection waits for its
	// next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (net/http answers 431
	// beyond it).
	MaxHeaderBytes int
	// MaxBodyBytes bounds a request's body: a larger declared length is
	// answered 413 at once, a body that grows past it fails its read (a
	// *http.MaxBytesError, answered 413 by httperr).
	MaxBodyBytes int64
}

// DefaultLimits are the limits a zero Limits field takes.
var DefaultLimits = Limits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       60 * time.Second,
	IdleTimeout:       120 * time.Second,
	MaxHeaderBytes:    64 << 10,
	MaxBodyBytes:      1 << 20,
}

// withDefaults fills l's zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.ReadHeaderTimeout > 0 {
		d.ReadHeaderTimeout = l.ReadHeaderTimeout
	}
	if l.ReadTimeout > 0 {
		d.ReadTimeout = l.ReadTimeout
	}
	if l.IdleTimeout > 0 {
		d.IdleTimeout = l.IdleTimeout
	}
	if l.MaxHeaderBytes > 0 {
		d.MaxHeaderBytes = l.MaxHeaderBytes
	}
	if l.MaxBodyBytes > 0 {
		d.MaxBodyBytes = l.MaxBodyBytes
	}
	return d
}

// server is an http.Server for handler with the host's limits: every
// server the host starts is made here.
func (h *Host) server(handler http.Handler) *http.Server {
	l := h.limits
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// guard refuses, before next (a ServeMux, which would clean the path and
// redirect to another cell's URL), a path with an empty or dot segment —
// "/counter//alarm", "/counter/./x", "/counter/../x", "/counter/%2e%2e" —
// with 400, and bounds the body to max bytes.
func guard(next http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkPath(r.URL); err != nil {
			httperr.Write(w, err)
			return
		}
		if r.ContentLength > max {
			httperr.Write(w, &http.MaxBytesError{Limit: max})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}

// checkPath refuses an empty, "." or ".." segment in u's path (after
// percent-decoding each segment), except the root path "/".
func checkPath(u *url.URL) error {
	p := u.EscapedPath()
	if p == "/" || p == "" {
		return nil
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, seg := range segs {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			dec = seg
		}
		switch dec {
		case "":
			return httperr.BadInput("bad path %q: an empty path segment (a cell name must not be empty)", p)
		case ".", "..":
			return httperr.BadInput("bad path %q: a %q path segment (a cell name must not be %q)", p, dec, dec)
		}
	}
	return nil
}
