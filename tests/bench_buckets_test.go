package tests

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/cellb/cellb/adapters/azure"
	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/adapters/gcs"
	"github.com/cellb/cellb/adapters/s3"
	"github.com/cellb/cellb/core/store"
)

// BenchmarkBuckets measures the three writes CellB's protocols are made of
// — a create-only put (ownership records, LTX files), a compare-and-swap
// (lease renewal) and a 1 MiB plain put (a typical LTX file) — on every
// adapter in one run, so the cloud adapters against their local servers
// can be compared with the local-directory store as a baseline. Start the
// servers (.ci/servers/*.sh) and source their env files first; a bucket
// whose variables are unset is skipped.
//
//	go test github.com/cellb/cellb/tests -run '^$' -bench Buckets
func BenchmarkBuckets(b *testing.B) {
	for _, bk := range []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"fs", openFSBench},
		{"s3-versitygw", openS3Bench},
		{"gcs-fake-gcs-server", openGCSBench},
		{"azure-azurite", openAzureBench},
	} {
		b.Run(bk.name, func(b *testing.B) {
			st := bk.open(b)
			b.Run("create-only", func(b *testing.B) { benchCreateOnly(b, st) })
			b.Run("compare-and-swap", func(b *testing.B) { benchCAS(b, st) })
			b.Run("put-1MiB", func(b *testing.B) { benchPut(b, st, 1<<20) })
		})
	}
}

func benchCreateOnly(b *testing.B, st store.Store) {
	ctx := context.Background()
	body := benchBody(128)
	run := randomTag()
	b.Cleanup(func() { deletePrefix(b, st, "bench/"+run+"/") })
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		binary.BigEndian.PutUint64(body, uint64(i))
		if _, err := st.Put(ctx, fmt.Sprintf("bench/%s/k%09d", run, i), body, store.PutOptions{Condition: store.IfAbsent}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchCAS(b *testing.B, st store.Store) {
	ctx := context.Background()
	key := "bench/" + randomTag() + "/cas"
	body := benchBody(128)
	v, err := st.Put(ctx, key, body, store.PutOptions{Condition: store.IfAbsent})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Delete(context.Background(), key) })
	b.ResetTimer()
	for i := 1; b.Loop(); i++ {
		// A unique body each time: an S3 ETag is the body's MD5.
		binary.BigEndian.PutUint64(body, uint64(i))
		if v, err = st.Put(ctx, key, body, store.PutOptions{Condition: store.IfVersion(v)}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPut(b *testing.B, st store.Store, size int) {
	ctx := context.Background()
	key := "bench/" + randomTag() + "/put"
	body := benchBody(size)
	b.Cleanup(func() { st.Delete(context.Background(), key) })
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		binary.BigEndian.PutUint64(body, uint64(i))
		if _, err := st.Put(ctx, key, body, store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchBody(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func randomTag() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func deletePrefix(b *testing.B, st store.Store, prefix string) {
	ctx := context.Background()
	all, err := store.ListAll(ctx, st, store.ListOptions{Prefix: prefix})
	if err != nil {
		b.Errorf("cleanup: %v", err)
		return
	}
	for _, o := range all.Objects {
		if err := st.Delete(ctx, o.Key); err != nil {
			b.Errorf("cleanup: %v", err)
			return
		}
	}
}

func benchEnv(b *testing.B, variable, script string) string {
	v := os.Getenv(variable)
	if v == "" {
		b.Skipf("%s is not set; start .ci/servers/%s and source its env file", variable, script)
	}
	return v
}

func openFSBench(b *testing.B) store.Store {
	st, err := fsstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close(st) })
	return st
}

func openS3Bench(b *testing.B) store.Store {
	endpoint := benchEnv(b, "CELLB_TEST_S3_ENDPOINT", "versitygw.sh")
	// Credentials through the standard chain, as the CLI gets them.
	b.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("CELLB_TEST_S3_ACCESS_KEY"))
	b.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("CELLB_TEST_S3_SECRET_KEY"))
	b.Setenv("AWS_CONFIG_FILE", os.DevNull)
	b.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	st, err := s3.New(context.Background(), s3.Options{
		Bucket: os.Getenv("CELLB_TEST_S3_BUCKET"), Endpoint: endpoint, UsePathStyle: true,
		Region: os.Getenv("CELLB_TEST_S3_REGION"),
	})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

func openGCSBench(b *testing.B) store.Store {
	endpoint := benchEnv(b, "CELLB_TEST_GCS_ENDPOINT", "fake-gcs.sh")
	// Opened by URL, as the CLI opens it (anonymous: the endpoint is local).
	mux := store.NewURLMux(gcs.URLOpener{Getenv: func(string) string { return "" }}.Register)
	st, err := mux.Open(context.Background(), "gs://"+os.Getenv("CELLB_TEST_GCS_BUCKET")+"?endpoint="+url.QueryEscape(endpoint))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close(st) })
	return st
}

func openAzureBench(b *testing.B) store.Store {
	endpoint := benchEnv(b, "CELLB_TEST_AZURE_ENDPOINT", "azurite.sh")
	st, err := azure.New(context.Background(), azure.Options{
		Container: os.Getenv("CELLB_TEST_AZURE_CONTAINER"), ServiceURL: endpoint,
		Account: os.Getenv("CELLB_TEST_AZURE_ACCOUNT"), AccountKey: os.Getenv("CELLB_TEST_AZURE_KEY"),
	})
	if err != nil {
		b.Fatal(err)
	}
	return st
}
