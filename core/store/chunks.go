package store

import (
	"bytes"
	"io"
)

// Chunks gives the parts of a body in order, for adapters that upload a
// large body in pieces (S3 multipart parts, Azure staged blocks): the next
// part's bytes, or io.EOF when there are no more. Any other error is the
// body's, not the bucket's.
type Chunks func() ([]byte, error)

// ChunksOf cuts data into parts of size bytes, then continues with the
// parts of rest (nil: none). The parts share data's memory.
func ChunksOf(data []byte, size int64, rest Chunks) Chunks {
	return func() ([]byte, error) {
		if len(data) == 0 {
			if rest == nil {
				return nil, io.EOF
			}
			return rest()
		}
		n := min(int64(len(data)), size)
		p := data[:n]
		data = data[n:]
		return p, nil
	}
}

// ChunksFrom reads the parts of a streamed body, size bytes each (the last
// one shorter), into a fresh buffer per part: an uploader may still hold
// the previous part while it reads the next.
func ChunksFrom(r io.Reader, size int64) Chunks {
	return func() ([]byte, error) {
		buf := make([]byte, size)
		n, err := io.ReadFull(r, buf)
		switch {
		case err == io.ErrUnexpectedEOF || (err == nil && n > 0):
			return buf[:n], nil
		case err == io.EOF:
			return nil, io.EOF
		}
		return nil, err
	}
}

// BodyFailure marks an upload that stopped because its body failed (a
// reader error, a body longer than an adapter can send), as opposed to a
// failure of the bucket: the adapter reports it with BodyError.
type BodyFailure struct{ Err error }

func (e BodyFailure) Error() string { return e.Err.Error() }
func (e BodyFailure) Unwrap() error { return e.Err }

// ReadHead reads up to threshold bytes of a body (size, when known,
// presizes the buffer). whole reports that the body ended within them, so
// an adapter can send it in one request; otherwise the rest of the body
// is what body reads next. A failure of the body is returned as
// BodyError's error.
//
// The whole body of a Bucket's Put (WholeBody) that fits the threshold is
// returned as it is, with no copy. A head is never longer than threshold.
func ReadHead(key string, body io.Reader, size, threshold int64) (head []byte, whole bool, err error) {
	if t, ok := body.(*trackedBody); ok && t.data != nil && int64(len(t.data)) <= threshold {
		if data, ok := WholeBody(body); ok {
			return data, true, nil
		}
	}
	var buf bytes.Buffer
	if size >= 0 {
		buf.Grow(int(min(size, threshold)))
	}
	_, err = io.CopyN(&buf, body, threshold)
	switch {
	case err == io.EOF:
		return buf.Bytes(), true, nil
	case err != nil:
		return nil, false, BodyError("put", key, err)
	}
	return buf.Bytes(), false, nil
}
