package azure_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/cellb/cellb/adapters/azure"
	"github.com/cellb/cellb/core/store"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestURLOptions(t *testing.T) {
	mux := store.NewURLMux(azure.Register)
	if got := strings.Join(mux.Schemes(), " "); got != "az azblob" {
		t.Fatalf("Register added %v", got)
	}
	options := func(raw string, env map[string]string) (azure.Options, error) {
		t.Helper()
		u, err := mux.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return azure.URLOpener{Getenv: envOf(env)}.URLOptions(u)
	}
	got, err := options("az://c/p", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "cs", "AZURE_STORAGE_ACCOUNT": "ignored"})
	if err != nil || got.ConnectionString != "cs" || got.Container != "c" || got.Account != "" {
		t.Errorf("connection string: %+v %v", got, err)
	}
	got, err = options("azblob://c", map[string]string{"AZURE_STORAGE_ACCOUNT": "acct", "AZURE_STORAGE_KEY": "k", "CELLB_AZURE_ENDPOINT": "http://127.0.0.1:10000/acct"})
	if err != nil || got.Container != "c" || got.Account != "acct" || got.AccountKey != "k" || got.ServiceURL != "http://127.0.0.1:10000/acct" {
		t.Errorf("shared key: %+v %v", got, err)
	}
	got, err = options("az://c?account=acct", map[string]string{"AZURE_STORAGE_ACCOUNT": "other"})
	if err != nil || got.Container != "c" || got.Account != "acct" || got.AccountKey != "" || got.ServiceURL != "" || got.ConnectionString != "" {
		t.Errorf("default credential chain: %+v %v", got, err)
	}
	got, err = options("az://c?endpoint=http://h/a", map[string]string{"CELLB_AZURE_ENDPOINT": "http://ignored/"})
	if err != nil || got.ServiceURL != "http://h/a" {
		t.Errorf("endpoint: %+v %v", got, err)
	}
	for _, c := range []struct {
		url, want string
		env       map[string]string
	}{
		{"az://c", "azure: no storage account: set AZURE_STORAGE_ACCOUNT (or ?account=), or AZURE_STORAGE_CONNECTION_STRING", nil},
		{"az://c?endpoint=http://h/a", "azure: AZURE_STORAGE_KEY needs AZURE_STORAGE_ACCOUNT", map[string]string{"AZURE_STORAGE_KEY": "k"}},
		{"az://c?account=a", "azure: AZURE_STORAGE_CONNECTION_STRING names the account and endpoint itself; drop ?account=, ?endpoint= and CELLB_AZURE_ENDPOINT", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "cs"}},
	} {
		if _, err := options(c.url, c.env); err == nil || err.Error() != c.want {
			t.Errorf("%s with %v: %v, want %q", c.url, c.env, err, c.want)
		}
	}
	for raw, want := range map[string]string{
		"az://c?container=x":     `unknown parameter "container" for az (known: account, endpoint)`,
		"azblob://c?container=x": `unknown parameter "container" for azblob (known: account, endpoint)`,
		"az://":                  "no bucket name (want az://container[/prefix][?account=NAME&endpoint=URL])",
		"az://c/p#x":             "unexpected",
	} {
		_, err := mux.Open(t.Context(), raw)
		var ue *store.URLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a *store.URLError saying %q", raw, err, want)
		}
	}
}

// TestURLOpensServer opens Azurite through the mux under both schemes,
// with the account and endpoint in the URL and the key in the
// environment, and checks that keys land under the URL's prefix.
func TestURLOpensServer(t *testing.T) {
	opts := serverOptions(t)
	ctx := t.Context()
	mux := store.NewURLMux(azure.URLOpener{Getenv: envOf(map[string]string{"AZURE_STORAGE_KEY": opts.AccountKey})}.Register)
	whole, err := azure.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"az", "azblob"} {
		prefix := "url-test-" + randomHex(6)
		s, err := mux.Open(ctx, scheme+"://"+opts.Container+"/"+prefix+"?account="+url.QueryEscape(opts.Account)+"&endpoint="+url.QueryEscape(opts.ServiceURL))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close(s)
		if _, err := s.Put(ctx, "k", []byte("x"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		defer whole.Delete(ctx, prefix+"/k")
		if o, err := whole.Get(ctx, prefix+"/k"); err != nil || string(o.Data) != "x" {
			t.Fatalf("%s: the key is not under the URL's prefix: %v", scheme, err)
		}
	}
}
