package azure_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/cellb/cellb/adapters/azure"
	"github.com/cellb/cellb/core/store"
)

// onEOF calls done once its reader has given its last byte.
type onEOF struct {
	r    io.Reader
	done func()
}

func (o *onEOF) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if err == io.EOF && o.done != nil {
		o.done()
		o.done = nil
	}
	return n, err
}

// A block that fails to stage fails the put before Put Block List, so
// nothing was published even though the whole body had been read: the
// error is definite, never ambiguous, and refusals keep their kind. The
// fake answers only once the body has been read to its end, so the Bucket
// sees a complete body.
func TestStagingFailureIsDefinite(t *testing.T) {
	cases := []struct {
		name string
		fake fakeAzure
		cond store.Condition
		want error // nil: neither ambiguous nor a refusal
	}{
		{"500 on a plain put", fakeAzure{status: 500, code: "InternalError"}, store.Condition{}, nil},
		{"503 on create-only", fakeAzure{status: 503, code: "ServerBusy"}, store.IfAbsent, nil},
		{"409 on if-match", fakeAzure{status: 409, code: "LeaseIdMissing"}, store.IfVersion(`"x"`), nil},
		{"403 on create-only", fakeAzure{status: 403, code: "AuthenticationFailed"}, store.IfAbsent, store.ErrAccessDenied},
		{"404 ContainerNotFound", fakeAzure{status: 404, code: "ContainerNotFound"}, store.Condition{}, store.ErrBucketNotFound},
	}
	for i := range cases {
		c := &cases[i]
		t.Run(c.name, func(t *testing.T) {
			c.fake.gate = make(chan struct{})
			st := openFake(t, &c.fake, func(o *azure.Options) {
				o.BlockSize, o.BlockThreshold, o.BlockConcurrency = 1<<10, 1<<10, 4
			})
			body := &onEOF{r: bytes.NewReader(make([]byte, 3<<10)), done: func() { close(c.fake.gate) }}
			_, err := store.PutFrom(t.Context(), st, "k", body, -1, store.PutOptions{Condition: c.cond})
			switch {
			case err == nil:
				t.Fatal("the put succeeded")
			case body.done != nil:
				t.Fatalf("the body was not read to its end: %v", err)
			case store.IsAmbiguous(err) || store.IsPreconditionFailed(err):
				t.Fatalf("a failure before the commit: %v", err)
			case c.want == nil && store.IsRefused(err), c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("err = %v, want kind %v", err, c.want)
			}
		})
	}
}
