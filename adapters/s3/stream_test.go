package s3_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cellb/cellb/adapters/s3"
	"github.com/cellb/cellb/core/store"
)

var errDied = errors.New("producer died")

// dyingReader gives n bytes, then fails.
type dyingReader struct{ n int }

func (r *dyingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errDied
	}
	k := min(len(p), r.n)
	clear(p[:k])
	r.n -= k
	return k, nil
}

// TestFailedStreamAbortsItsUpload: a streamed body that dies after several
// parts were uploaded leaves no object and no multipart upload behind, and
// a streamed conditional put of unknown size that loses its condition
// leaves none either.
func TestFailedStreamAbortsItsUpload(t *testing.T) {
	ctx := t.Context()
	st, raw, prefix := openServerRaw(t, func(o *s3.Options) {
		o.PartSize = 5 << 20
		o.MultipartThreshold = 5 << 20
	})
	_, err := store.PutFrom(ctx, st, "dies", &dyingReader{n: 12 << 20}, -1, store.PutOptions{})
	if !errors.Is(err, errDied) || store.IsAmbiguous(err) {
		t.Fatalf("a body dying after 12 MiB: %v, want the reader's error, not ambiguous", err)
	}
	if _, err := st.Get(ctx, "dies"); !store.IsNotFound(err) {
		t.Fatalf("the failed stream left an object (get: %v)", err)
	}
	v, err := store.PutFrom(ctx, st, "cond", io.LimitReader(&dyingReader{n: 11 << 20}, 11<<20), -1, store.PutOptions{Condition: store.IfAbsent})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.PutFrom(ctx, st, "cond", bytes.NewReader(make([]byte, 11<<20)), -1, store.PutOptions{Condition: store.IfAbsent})
	if !store.IsPreconditionFailed(err) {
		t.Fatalf("streamed multipart create-only on an existing key: %v", err)
	}
	if o, err := st.Get(ctx, "cond"); err != nil || o.Version != v {
		t.Fatalf("after the rejected stream: %v %v", o, err)
	}
	ups, err := raw.Client().ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{
		Bucket: aws.String(os.Getenv("CELLB_TEST_S3_BUCKET")), Prefix: aws.String(prefix),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Fatalf("%d multipart uploads left behind, e.g. %s", len(ups.Uploads), aws.ToString(ups.Uploads[0].Key))
	}
}
