package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cellb/cellb/adapters/s3"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/page"
	"github.com/cellb/cellb/core/store"
)

// wireCount is an http.RoundTripper that counts the body bytes of every
// request sent and every response read through it: what passes through
// the node, whatever the adapter does.
type wireCount struct {
	next          http.RoundTripper
	sent, fetched atomic.Int64
	requests      atomic.Int64
}

func (w *wireCount) RoundTrip(r *http.Request) (*http.Response, error) {
	w.requests.Add(1)
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countBody{ReadCloser: r.Body, n: &w.sent}
	}
	resp, err := w.next.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = &countBody{ReadCloser: resp.Body, n: &w.fetched}
	}
	return resp, err
}

type countBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// noCopier hides the store's Copier, so store.Copy streams.
type noCopier struct{ store.Store }

func (n noCopier) NewRangeReader(ctx context.Context, key string, off, l int64) (*store.Reader, error) {
	return store.NewRangeReader(ctx, n.Store, key, off, l)
}

func (n noCopier) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	return store.PutFrom(ctx, n.Store, key, r, size, opts)
}

// TestForkMovesNoCellSizedData forks a 200 MiB cell (CELLB_FORK_MIB to
// change it) on the S3 server and counts the body bytes that cross the
// node's HTTP connection: with the adapter's Copier (multipart copy) the
// fork moves a few KiB of requests; without it (store.Copy streams) the
// cell goes down and up again. docs/benchmarks.md has the figures.
func TestForkMovesNoCellSizedData(t *testing.T) {
	opts := serverOptions(t)
	ctx := t.Context()
	mib := 200
	if v := os.Getenv("CELLB_FORK_MIB"); v != "" {
		mib, _ = strconv.Atoi(v)
	}
	wire := &wireCount{next: http.DefaultTransport}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(opts.Region), config.WithCredentialsProvider(opts.Credentials))
	if err != nil {
		t.Fatal(err)
	}
	client := awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String(opts.Endpoint)
		o.UsePathStyle = true
		o.HTTPClient = &http.Client{Transport: wire}
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	raw, err := s3.NewFromClient(client, s3.Options{Bucket: opts.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.WithPrefix(raw, "fork-"+randomHex(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(t, st) })

	// The source: a snapshot of mib MiB of incompressible pages and two
	// commits after it, as the LTX log writes them.
	const src, pageSize = "Counter:0123abcd", 4096
	pages := uint32(mib << 20 / pageSize)
	lock := ltx.LockPgno(pageSize)
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, pageSize)
	pgno := uint32(0)
	next := func() (page.Page, bool, error) {
		pgno++
		if pgno == lock {
			pgno++
		}
		if pgno > pages {
			return page.Page{}, false, nil
		}
		for i := 0; i < pageSize; i += 8 {
			v := r.Uint64()
			for j := range 8 {
				buf[i+j] = byte(v >> (8 * j))
			}
		}
		return page.Page{Pgno: pgno, Data: buf}, true, nil
	}
	now := time.Now().UnixMilli()
	put := func(min, max ltx.TXID, next func() (page.Page, bool, error)) {
		pr, pw := io.Pipe()
		go func() {
			_, err := ltx.EncodeTo(pw, ltx.Header{PageSize: pageSize, Commit: pages, MinTXID: min, MaxTXID: max, Timestamp: now}, next)
			pw.CloseWithError(err)
		}()
		md := map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(now)}
		if _, err := store.PutFrom(ctx, st, ltx.Key(src, 1, 0, min, max), pr, -1, store.PutOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	put(1, 1, next)
	for txid := ltx.TXID(2); txid <= 3; txid++ {
		done := false
		put(txid, txid, func() (page.Page, bool, error) {
			if done {
				return page.Page{}, false, nil
			}
			done = true
			return page.Page{Pgno: 2, Data: buf}, true, nil
		})
	}
	cellBytes := int64(0)
	listed, err := store.ListAll(ctx, st, store.ListOptions{Prefix: layout.CellPrefix(src)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range listed.Objects {
		cellBytes += o.Size
	}

	for _, tc := range []struct {
		name string
		s    store.Store
		dst  string
	}{
		{"copier", st, "Counter:fedcba98"},
		{"streamed", noCopier{st}, "Counter:fedcba99"},
	} {
		sent0, fetched0, req0 := wire.sent.Load(), wire.fetched.Load(), wire.requests.Load()
		start := time.Now()
		res, err := ltxlog.Fork(ctx, tc.s, durability.ForkRequest{Source: src, Dest: tc.dst, Epoch: 1})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		took := time.Since(start)
		sent, fetched, reqs := wire.sent.Load()-sent0, wire.fetched.Load()-fetched0, wire.requests.Load()-req0
		t.Logf("fork of a %.1f MiB cell (%d files), %s: %d requests, %s sent, %s received, %v",
			float64(cellBytes)/(1<<20), res.Files, tc.name, reqs, sizeOf(sent), sizeOf(fetched), took.Round(time.Millisecond))
		if tc.name == "copier" {
			if sent+fetched > 1<<20 {
				t.Errorf("the fork moved %d bytes through the node for a %d-byte cell; want no cell-sized data (under 1 MiB)", sent+fetched, cellBytes)
			}
			if res.Copied != res.Files {
				t.Errorf("%d of %d files copied in the bucket", res.Copied, res.Files)
			}
		}
		// The copy is the source's bytes.
		got, err := store.ListAll(ctx, st, store.ListOptions{Prefix: layout.CellPrefix(tc.dst)})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, o := range got.Objects {
			n += o.Size
		}
		if n != cellBytes || len(got.Objects) != len(listed.Objects) {
			t.Errorf("%s: the destination holds %d objects of %d bytes, want %d of %d", tc.name, len(got.Objects), n, len(listed.Objects), cellBytes)
		}
	}
}

func sizeOf(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// TestCopyInSeveralParts copies a 12 MiB object in 5 MiB parts (the part
// size lowered from 5 GiB), so the ranged UploadPartCopy path runs: the
// copy is byte for byte the source, with its metadata.
func TestCopyInSeveralParts(t *testing.T) {
	defer s3.SetCopyPartSize(5 << 20)()
	st := openServer(t, nil)
	ctx := t.Context()
	body := make([]byte, 12<<20+123)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	md := map[string]string{"litestream-timestamp": "2026-05-30T02:46:41.091Z"}
	if _, err := st.Put(ctx, "src", body, store.PutOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, st, "src", "dst"); err != nil {
		t.Fatal(err)
	}
	o, err := st.Get(ctx, "dst")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(o.Data, body) || o.Metadata["litestream-timestamp"] != md["litestream-timestamp"] {
		t.Fatalf("the copy in parts: %d bytes (equal %v), metadata %v", len(o.Data), bytes.Equal(o.Data, body), o.Metadata)
	}
}
