module github.com/cellb/cellb/adapters/fs

go 1.26.0

require (
	github.com/cellb/cellb/core v0.1.0
	github.com/spf13/afero v1.15.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/cellb/cellb/conformance v0.1.0
	golang.org/x/text v0.28.0 // indirect
)
