module github.com/cellb/cellb/examples

go 1.26

require (
	github.com/cellb/cellb/adapters/fs v0.0.0
	github.com/cellb/cellb/core v0.0.0
	github.com/cellb/cellb/drivers/wasm v0.0.0
)

replace (
	github.com/cellb/cellb/adapters/fs => ../adapters/fs
	github.com/cellb/cellb/conformance => ../conformance
	github.com/cellb/cellb/core => ../core
	github.com/cellb/cellb/drivers/wasm => ../drivers/wasm
)
