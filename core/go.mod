module github.com/cellb/cellb/core

go 1.26
