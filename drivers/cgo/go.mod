module github.com/cellb/cellb/drivers/cgo

go 1.26.0

require (
	github.com/cellb/cellb/conformance v0.1.0
	github.com/cellb/cellb/core v0.1.0
	github.com/mattn/go-sqlite3 v1.14.53
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/pierrec/lz4/v4 v4.1.23 // indirect
	github.com/superfly/ltx v0.5.3 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
)
