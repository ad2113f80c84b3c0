package gcs_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/adapters/gcs"
	"github.com/cellb/cellb/core/store"
)

// A service account key file (Options.CredentialsFile) gets a token from
// its token_uri and every request carries it; a refused token is a
// definite refusal naming GOOGLE_APPLICATION_CREDENTIALS, and nothing
// reaches the bucket.
func TestCredentialsFile(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var refuse atomic.Bool
	var api, unauthorized atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/token" {
			if refuse.Load() {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
				return
			}
			io.WriteString(w, `{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`)
			return
		}
		api.Add(1)
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			unauthorized.Add(1)
		}
		io.WriteString(w, `{"name":"k","generation":"3","size":"4"}`)
	}))
	t.Cleanup(srv.Close)
	file, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "cellb@p.iam.example", "token_uri": srv.URL + "/token",
	})
	path := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *gcs.Store {
		s, err := gcs.New(t.Context(), gcs.Options{Bucket: "b", Endpoint: srv.URL + "/storage/v1/", CredentialsFile: path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	if v, err := open().Put(t.Context(), "k", []byte("body"), store.PutOptions{Condition: store.IfAbsent}); err != nil || v != "3" {
		t.Fatalf("put: %q, %v", v, err)
	}
	if api.Load() != 1 || unauthorized.Load() != 0 {
		t.Fatalf("%d requests, %d without the token", api.Load(), unauthorized.Load())
	}
	refuse.Store(true)
	_, err = open().Put(t.Context(), "k", []byte("body"), store.PutOptions{Condition: store.IfAbsent})
	if !errors.Is(err, store.ErrAccessDenied) || store.IsAmbiguous(err) || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Fatalf("refused token: %v", err)
	}
	if api.Load() != 1 {
		t.Fatalf("a request reached the bucket without a token")
	}
	if _, err := gcs.New(t.Context(), gcs.Options{Bucket: "b", CredentialsFile: filepath.Join(t.TempDir(), "missing.json")}); err == nil {
		t.Fatal("New accepted a missing credentials file")
	}
}
