package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cellb/cellb/core/store"
)

// NewRangeReader opens a range with a ranged GetObject (S3 sends the
// metadata with every read, so dataOnly changes nothing). A read of no
// bytes, or from the very end, is a HeadObject, since S3 answers a range
// that starts at the end with 416; the Bucket then checks the offset
// against the size.
func (d *driver) NewRangeReader(ctx context.Context, key string, offset, length int64, _ bool) (*store.Reader, error) {
	bucket, objKey := aws.String(d.opts.Bucket), aws.String(key)
	if length != 0 {
		in := &s3.GetObjectInput{Bucket: bucket, Key: objKey}
		if offset > 0 || length > 0 {
			rng := fmt.Sprintf("bytes=%d-", offset)
			if length > 0 {
				rng += fmt.Sprint(offset + length - 1)
			}
			in.Range = aws.String(rng)
		}
		out, err := d.client.GetObject(ctx, in)
		if err == nil {
			r, err := rangeReader(out, in.Range != nil, offset, length)
			if err != nil {
				out.Body.Close()
				return nil, err
			}
			return r, nil
		}
		if status(err) != http.StatusRequestedRangeNotSatisfiable {
			return nil, err
		}
		// 416: the range starts at or past the end; HEAD tells which.
	}
	head, err := d.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: objKey})
	if err != nil {
		return nil, err
	}
	size := aws.ToInt64(head.ContentLength)
	if length != 0 && offset < size {
		return nil, errors.New("s3: the server refused a satisfiable range")
	}
	return &store.Reader{
		Version: version(head.ETag), Size: size, Metadata: head.Metadata, Modified: aws.ToTime(head.LastModified),
		Headers: headersOf(head.ContentType, head.ContentLanguage, head.ContentDisposition, head.ContentEncoding, head.CacheControl),
		Body:    http.NoBody,
	}, nil
}

// rangeReader checks that the server sent the range asked for (a server
// that ignored Range would send the object from its start) and returns
// the reader over it.
func rangeReader(out *s3.GetObjectOutput, ranged bool, offset, length int64) (*store.Reader, error) {
	got := aws.ToInt64(out.ContentLength)
	size := got
	if ranged {
		var err error
		if size, err = rangeTotal(aws.ToString(out.ContentRange), got); err != nil {
			return nil, err
		}
	}
	want := size - offset
	if length >= 0 && length < want {
		want = length
	}
	if got != want {
		return nil, fmt.Errorf("s3: asked for %d bytes from %d of %d, got %d", want, offset, size, got)
	}
	return &store.Reader{
		Version: version(out.ETag), Size: size, Metadata: out.Metadata, Modified: aws.ToTime(out.LastModified),
		Headers: headersOf(out.ContentType, out.ContentLanguage, out.ContentDisposition, out.ContentEncoding, out.CacheControl),
		Body:    out.Body,
	}, nil
}

// rangeTotal reads the object's size from a Content-Range header
// ("bytes 0-9/100"); without one the server sent the whole object, whose
// size is the body's.
func rangeTotal(contentRange string, bodyLen int64) (int64, error) {
	if contentRange == "" {
		return bodyLen, nil
	}
	var lo, hi, total int64
	if _, err := fmt.Sscanf(contentRange, "bytes %d-%d/%d", &lo, &hi, &total); err != nil {
		return 0, fmt.Errorf("s3: unreadable Content-Range %q: %w", contentRange, err)
	}
	return total, nil
}
