// Package httpbuf is an http.ResponseWriter that keeps the whole answer in
// memory and hands it over as an *http.Response: the runtime's output gate
// (a Fetch's answer leaves only once its commits are durable) and the
// host's forwarding (an owner's answer taken as a Fetch's response) both
// need one.
package httpbuf

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// Buffer is an http.ResponseWriter kept in memory. The first WriteHeader
// (or Write, as 200) sets the status; later ones are ignored.
type Buffer struct {
	responseHead
	body bytes.Buffer
}

// responseHead is the status and header part of an http.ResponseWriter,
// shared by Buffer and Stream: the first WriteHeader wins.
type responseHead struct {
	header      http.Header
	status      int
	wroteHeader bool
}

func (h *responseHead) Header() http.Header { return h.header }

func (h *responseHead) WriteHeader(code int) {
	if h.wroteHeader {
		return
	}
	h.wroteHeader = true
	h.status = code
}

// New returns an empty Buffer.
func New() *Buffer { return &Buffer{responseHead: responseHead{header: http.Header{}}} }

func (b *Buffer) Write(p []byte) (int, error) {
	if !b.wroteHeader {
		b.WriteHeader(http.StatusOK)
	}
	return b.body.Write(p)
}

// Response is the answer written so far as a response to req (200 when
// nothing set a status). With sniff, a body without a Content-Type gets
// the one net/http would have sent.
func (b *Buffer) Response(req *http.Request, sniff bool) *http.Response {
	status := b.status
	if !b.wroteHeader {
		status = http.StatusOK
	}
	h := b.header
	if sniff {
		h = h.Clone()
		if h.Get("Content-Type") == "" && b.body.Len() > 0 {
			h.Set("Content-Type", http.DetectContentType(b.body.Bytes()))
		}
	}
	body := b.body.Bytes()
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
