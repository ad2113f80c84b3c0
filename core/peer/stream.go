package peer

import (
	"net/http"

	"github.com/cellb/cellb/core/internal/httpbuf"
)

// HeaderStreamed marks an owner's answer that streams (a cell's response
// that flushed, issue 22): the forwarding side copies it through chunk by
// chunk, flushed, instead of reading it whole first. It is removed from
// the answer the forwarding side writes.
const HeaderStreamed = "X-Cellb-Streamed"

// Streamed reports whether resp is a streamed answer to copy through.
func Streamed(resp *http.Response) bool {
	return resp.Header.Get(HeaderStreamed) != "" && resp.Header.Get(HeaderNotApplied) == ""
}

// CopyStreamed writes a streamed answer to w as it comes: the head (without
// HeaderStreamed), then each chunk, flushed. A body that fails midway
// returns its error with w written in part: the caller must end w's
// response as broken (a server handler panics with http.ErrAbortHandler),
// never as complete.
func CopyStreamed(w http.ResponseWriter, resp *http.Response) error {
	for k, vs := range resp.Header {
		if http.CanonicalHeaderKey(k) == HeaderStreamed {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	return httpbuf.CopyFlushed(w, resp.Body)
}
