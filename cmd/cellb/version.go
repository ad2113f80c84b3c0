package main

import (
	"context"
	"errors"
	"runtime/debug"

	"github.com/cellb/cellb/core/cli"
)

func versionCommand() cli.Entry {
	return command("version", "print the versions of cellb and of the CellB modules built into it",
		func(ctx context.Context, e *env, args []string) int {
			cl := newCmdLine("version", "", `Prints the version of the cellb module and of every CellB module built into
this binary, as the Go build recorded them (runtime/debug.ReadBuildInfo).
"(devel)" means the module was built from a work tree (a checkout or a
go.work workspace), not from a tagged release; the commit is printed when
the build recorded it. "cellb --version" is the same command.`, 0, 0, "no arguments")
			if _, code, done := cl.Parse(e.stdout, e.stderr, args); done {
				return code
			}
			bi, ok := debug.ReadBuildInfo()
			if !ok {
				return cl.Fail(e.stderr, errors.New("this binary carries no build information (built without module support)"))
			}
			cli.WriteVersion(e.stdout, "cellb", bi, "github.com/cellb/cellb")
			return cli.ExitOK
		})
}
