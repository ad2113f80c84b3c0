module github.com/cellb/cellb/adapters/gcs

go 1.26

require github.com/cellb/cellb/core v0.0.0

replace github.com/cellb/cellb/core => ../../core
