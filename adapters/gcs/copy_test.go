package gcs_test

import (
	"errors"
	"testing"

	"github.com/cellb/cellb/adapters/gcs"
	"github.com/cellb/cellb/core/store"
)

// TestCopyRewritesInTheService copies with the rewrite (no StreamCopies)
// on the emulator: body, metadata and content headers arrive, and a
// missing source is ErrNotFound. The emulator ignores the destination's
// ifGenerationMatch=0 on a rewrite, so the create-only half of the
// contract is left to the real service (which documents it); storetest's
// copy case runs on the emulator with StreamCopies.
func TestCopyRewritesInTheService(t *testing.T) {
	opts := serverOptions(t)
	opts.StreamCopies = false
	s, err := gcs.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	prefix := "copytest/" + t.Name() + "/"
	t.Cleanup(func() {
		for _, k := range []string{"src", "dst"} {
			_ = s.Delete(ctx, prefix+k)
		}
	})
	md := map[string]string{"litestream-timestamp": "2026-05-30T02:46:41.091Z"}
	hdr := store.ContentHeaders{ContentType: "application/octet-stream", CacheControl: "no-store"}
	if _, err := s.Put(ctx, prefix+"src", []byte("rewritten in the service"), store.PutOptions{Metadata: md, Headers: hdr}); err != nil {
		t.Fatal(err)
	}
	v, err := s.Copy(ctx, prefix+"src", prefix+"dst")
	if err != nil || v == "" {
		t.Fatalf("copy: %q, %v", v, err)
	}
	o, err := s.Get(ctx, prefix+"dst")
	if err != nil || string(o.Data) != "rewritten in the service" || o.Version != v || o.Metadata["litestream-timestamp"] != md["litestream-timestamp"] || o.Headers.CacheControl != "no-store" {
		t.Fatalf("the copy: %+v, %v", o, err)
	}
	if _, err := s.Copy(ctx, prefix+"missing", prefix+"dst2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("copy of a missing source: %v, want ErrNotFound", err)
	}
}
