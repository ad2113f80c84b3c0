module github.com/cellb/cellb/core

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/pierrec/lz4/v4 v4.1.23
	github.com/superfly/ltx v0.5.3
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/metric v1.47.0
)

require github.com/cespare/xxhash/v2 v2.3.0 // indirect
