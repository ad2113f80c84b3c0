package gcs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// Credentials come from golang.org/x/oauth2/google, the one Google
// library the adapter keeps: it implements Application Default
// Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's login, workload
// identity federation, the metadata server on Google's machines) and
// refreshes tokens, which is exactly the part of the SDK the adapter
// cannot spell in a few lines. It pulls in no gRPC and no OpenTelemetry.

// scope is the OAuth scope of every request: objects are read and written,
// nothing else is administered.
const scope = "https://www.googleapis.com/auth/devstorage.read_write"

// emulatorHost is the variable every Google client reads to find an
// emulator.
const emulatorHost = "STORAGE_EMULATOR_HOST"

// defaultEndpoint is the service's JSON API.
const defaultEndpoint = "https://storage.googleapis.com/storage/v1/"

// endpoint returns the JSON API endpoint opts name, and whether requests
// go without credentials: Options.Endpoint, else the emulator of
// STORAGE_EMULATOR_HOST (always anonymous), else the service.
func endpoint(opts Options, getenv func(string) string) (string, bool) {
	if opts.Endpoint != "" {
		return opts.Endpoint, opts.Anonymous
	}
	if h := getenv(emulatorHost); h != "" {
		if !strings.Contains(h, "://") {
			h = "http://" + h
		}
		return strings.TrimSuffix(h, "/") + "/storage/v1/", true
	}
	return defaultEndpoint, opts.Anonymous
}

// newTransport returns a transport of its own, so Close can release its
// idle connections.
func newTransport() *http.Transport {
	return http.DefaultTransport.(*http.Transport).Clone()
}

// authorized returns a client that sends every request over base with a
// token from opts' credentials.
func authorized(ctx context.Context, opts Options, base http.RoundTripper) (*http.Client, error) {
	// The token sources keep this context for every later refresh: the
	// caller's may end once New returns, the Store's tokens must not.
	ctx = context.WithoutCancel(ctx)
	var creds *google.Credentials
	var err error
	if opts.CredentialsFile != "" {
		creds, err = credentialsFile(ctx, opts.CredentialsFile)
	} else {
		creds, err = google.FindDefaultCredentials(ctx, scope)
	}
	if err != nil {
		return nil, fmt.Errorf("gcs: %w (%s)", err, accessHint)
	}
	return &http.Client{Transport: &oauth2.Transport{Source: creds.TokenSource, Base: base}}, nil
}

// credentialsFile reads a credentials JSON file of the kinds ADC accepts.
func credentialsFile(ctx context.Context, name string) (*google.Credentials, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading credentials: %w", err)
	}
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("credentials file %s: %w", name, err)
	}
	switch t := google.CredentialsType(f.Type); t {
	case google.ServiceAccount, google.AuthorizedUser, google.ExternalAccount,
		google.ExternalAccountAuthorizedUser, google.ImpersonatedServiceAccount:
		return google.CredentialsFromJSONWithType(ctx, data, t, scope)
	}
	return nil, fmt.Errorf("credentials file %s: unsupported type %q", name, f.Type)
}
