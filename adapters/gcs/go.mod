module github.com/cellb/cellb/adapters/gcs

go 1.26.0

require github.com/cellb/cellb/core v0.1.0

require (
	cloud.google.com/go/compute/metadata v0.10.0 // indirect
	github.com/cellb/cellb/conformance v0.1.0
	golang.org/x/oauth2 v0.38.0
	golang.org/x/sys v0.49.0 // indirect
)
