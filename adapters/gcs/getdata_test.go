package gcs_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/adapters/gcs"
	"github.com/cellb/cellb/core/store"
)

// countingTransport counts the HTTP requests a client sends.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// A full Get takes two requests (attributes, then that generation's body);
// store.GetData, which the fleet uses for own.json before every
// acknowledgement, takes one, and reads the same body and version.
func TestGetDataIsOneRequest(t *testing.T) {
	opts := serverOptions(t)
	ct := &countingTransport{}
	raw, err := gcs.NewFromHTTPClient(&http.Client{Transport: ct}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := "getdata-" + randomHex(8) + "/own.json"
	t.Cleanup(func() { raw.Delete(ctx, key) })
	v, err := raw.Put(ctx, key, []byte(`{"node":"a","epoch":7}`), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count := func(read func() (*store.Object, error)) (int64, *store.Object) {
		t.Helper()
		before := ct.n.Load()
		o, err := read()
		if err != nil {
			t.Fatal(err)
		}
		return ct.n.Load() - before, o
	}
	gets, full := count(func() (*store.Object, error) { return raw.Get(ctx, key) })
	datas, data := count(func() (*store.Object, error) { return store.GetData(ctx, raw, key) })
	t.Logf("requests: Get %d, GetData %d", gets, datas)
	if datas != 1 {
		t.Errorf("GetData took %d requests, want 1", datas)
	}
	if gets <= datas {
		t.Errorf("Get took %d requests, GetData %d: nothing saved", gets, datas)
	}
	if string(data.Data) != string(full.Data) || data.Version != full.Version || data.Version != v {
		t.Errorf("GetData read %q at %q, Get %q at %q, the write returned %q", data.Data, data.Version, full.Data, full.Version, v)
	}
}
