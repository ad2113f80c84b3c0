module github.com/cellb/cellb/core

go 1.26

require (
	github.com/pierrec/lz4/v4 v4.1.23
	github.com/superfly/ltx v0.5.3
)
