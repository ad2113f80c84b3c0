module github.com/cellb/cellb/cmd/cellb

go 1.26

require (
	github.com/cellb/cellb/adapters/azure v0.0.0
	github.com/cellb/cellb/adapters/fs v0.0.0
	github.com/cellb/cellb/adapters/gcs v0.0.0
	github.com/cellb/cellb/adapters/s3 v0.0.0
	github.com/cellb/cellb/conformance v0.0.0
	github.com/cellb/cellb/core v0.0.0
	github.com/cellb/cellb/drivers/cgo v0.0.0
	github.com/cellb/cellb/drivers/modernc v0.0.0
	github.com/cellb/cellb/drivers/wasm v0.0.0
	github.com/cellb/cellb/examples v0.0.0
)

replace (
	github.com/cellb/cellb/adapters/azure => ../../adapters/azure
	github.com/cellb/cellb/adapters/fs => ../../adapters/fs
	github.com/cellb/cellb/adapters/gcs => ../../adapters/gcs
	github.com/cellb/cellb/adapters/s3 => ../../adapters/s3
	github.com/cellb/cellb/conformance => ../../conformance
	github.com/cellb/cellb/core => ../../core
	github.com/cellb/cellb/drivers/cgo => ../../drivers/cgo
	github.com/cellb/cellb/drivers/modernc => ../../drivers/modernc
	github.com/cellb/cellb/drivers/wasm => ../../drivers/wasm
	github.com/cellb/cellb/examples => ../../examples
)
