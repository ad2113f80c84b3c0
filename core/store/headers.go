package store

import (
	"errors"
	"fmt"
)

// ContentHeaders are the HTTP content headers a store keeps as an object's
// own headers, beside its body and user metadata: what S3 returns as
// Content-Type etc., GCS keeps as object attributes, Azure as the blob's
// HTTP headers. celld stores an R2 object's five HTTP fields there
// (celld-bucket-format.md §4.7). The zero value is no headers.
//
// A store returns the headers exactly as they were put, with one allowance:
// an object put without a ContentType may read back with the store's
// default type (DefaultContentType). ContentEncoding is only recorded: a
// body stored with "gzip" reads back byte for byte as it was put, never
// decompressed.
type ContentHeaders struct {
	ContentType        string `json:"contentType,omitempty"`
	ContentLanguage    string `json:"contentLanguage,omitempty"`
	ContentDisposition string `json:"contentDisposition,omitempty"`
	ContentEncoding    string `json:"contentEncoding,omitempty"`
	CacheControl       string `json:"cacheControl,omitempty"`
}

// IsZero reports whether no header is set.
func (h ContentHeaders) IsZero() bool { return h == ContentHeaders{} }

// Fields returns the headers as (HTTP name, value) pairs, in a fixed order.
func (h ContentHeaders) Fields() [5][2]string {
	return [5][2]string{
		{"Content-Type", h.ContentType},
		{"Content-Language", h.ContentLanguage},
		{"Content-Disposition", h.ContentDisposition},
		{"Content-Encoding", h.ContentEncoding},
		{"Cache-Control", h.CacheControl},
	}
}

// DefaultContentType reports whether t is a type a store reports for an
// object put without one (S3, GCS and Azure fill one in).
func DefaultContentType(t string) bool {
	return t == "application/octet-stream" || t == "binary/octet-stream"
}

// MaxHeaderLen is the longest value of one content header, in bytes.
const MaxHeaderLen = 1024

// ErrInvalidHeaders: a content header's value is not acceptable.
var ErrInvalidHeaders = errors.New("invalid content header")

// ValidateHeaders checks the values every adapter can store and return
// unchanged: printable ASCII (HTTP header values; S3 and Azure send them as
// such), no leading or trailing space (HTTP drops it), at most MaxHeaderLen
// bytes.
func ValidateHeaders(h ContentHeaders) error {
	for _, f := range h.Fields() {
		name, v := f[0], f[1]
		if len(v) > MaxHeaderLen {
			return fmt.Errorf("%w: %s is %d bytes, longer than %d", ErrInvalidHeaders, name, len(v), MaxHeaderLen)
		}
		if v != "" && (v[0] == ' ' || v[len(v)-1] == ' ') {
			return fmt.Errorf("%w: %s %q starts or ends with a space", ErrInvalidHeaders, name, v)
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return fmt.Errorf("%w: %s has a byte outside printable ASCII", ErrInvalidHeaders, name)
			}
		}
	}
	return nil
}
