package durability

import (
	"context"
	"io"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/store"
)

// PutFromRetrying is PutRetrying for a body streamed with store.PutFrom
// (size unknown): body is called once per attempt for a fresh reader of
// the same bytes, which is closed when the attempt ends.
func PutFromRetrying(s store.Store, key string, body func() io.ReadCloser, opts store.PutOptions, r Retry) error {
	clk := clock.Or(r.Clock)
	delay := r.Delay
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
		rc := body()
		_, err := store.PutFrom(ctx, s, key, rc, -1, opts)
		rc.Close()
		cancel()
		if err == nil {
			return nil
		}
		if attempt >= r.Retries || store.IsPreconditionFailed(err) || (r.Stop != nil && r.Stop()) {
			return err
		}
		if r.Logger != nil {
			r.Logger.Warn("upload failed; retrying", "key", key, "attempt", attempt+1, "err", err)
		}
		t := clk.NewTimer(delay)
		<-t.C()
		delay *= 2
	}
}
