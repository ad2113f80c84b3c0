// Package gcs is CellB's Store on Google Cloud Storage: a store.Driver
// speaking the JSON API with net/http, under the portable store.Bucket.
//
// A Version is the object's generation, as a decimal string. Create-only
// is ifGenerationMatch=0 and compare-and-swap ifGenerationMatch=<the
// generation>; a 412 answer is ErrPreconditionFailed. A conditional upload
// is one request sent once (see write.go), every upload carries the
// body's CRC32C, and a read gets the attributes and the body of exactly
// one generation (see read.go).
//
// Why no SDK. cloud.google.com/go/storage brings gRPC (with xDS and
// Envoy's generated types), OpenTelemetry and the generated API
// client into every program that links this package, for the seven calls
// the adapter makes: 54 % of a cold `go build ./cmd/cellb`, whose first
// run should answer within two minutes on a fresh two-core machine. Spoken
// directly, the calls are a few hundred lines, and `go list -deps
// ./cmd/cellb` went from 1,009 packages to 640 (this package's own from 672
// to 209, most of them the standard library); a cold build of this
// package alone (empty GOCACHE, warm module cache) from 237 s to 67 s of
// CPU, measured back to back (docs/benchmarks.md, "The first build").
//
// Credentials are the one Google library kept: golang.org/x/oauth2/google
// (Application Default Credentials — GOOGLE_APPLICATION_CREDENTIALS,
// gcloud's login, workload identity, the metadata server — and token
// refresh), with the devstorage.read_write scope, or Options.CredentialsFile.
// STORAGE_EMULATOR_HOST is honoured as by every Google client: requests go
// to http://$STORAGE_EMULATOR_HOST without credentials. Nothing here logs.
package gcs
