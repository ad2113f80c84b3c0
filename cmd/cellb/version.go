package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

func versionCommand() command {
	return command{
		name:    "version",
		summary: "print the versions of cellb and of the CellB modules built into it",
		run: func(ctx context.Context, e *env, args []string) int {
			cl := newCmdLine("version", "", `Prints the version of the cellb module and of every CellB module built into
this binary, as the Go build recorded them (runtime/debug.ReadBuildInfo).
"(devel)" means the module was built from a work tree (a checkout or a
go.work workspace), not from a tagged release; the commit is printed when
the build recorded it. "cellb --version" is the same command.`, 0, 0, "no arguments")
			if _, code, done := cl.parse(e, args); done {
				return code
			}
			bi, ok := debug.ReadBuildInfo()
			if !ok {
				return cl.fail(e, fmt.Errorf("this binary carries no build information (built without module support)"))
			}
			writeVersion(e.stdout, bi)
			return exitOK
		},
	}
}

// cellbModule prefixes the path of every CellB module.
const cellbModule = "github.com/cellb/cellb"

// writeVersion prints the main module, then every CellB module bi lists,
// then the Go version and the commit when the build recorded one, and a
// note when a module was built from a work tree.
func writeVersion(w io.Writer, bi *debug.BuildInfo) {
	devel := false
	line := func(name string, m debug.Module) {
		v := moduleVersion(m)
		devel = devel || strings.Contains(v, "(devel)")
		fmt.Fprintf(w, "  %-44s %s\n", name, v)
	}
	fmt.Fprintf(w, "cellb %s\n", moduleVersion(bi.Main))
	if bi.Main.Path != "" {
		line(bi.Main.Path, bi.Main)
	}
	for _, d := range bi.Deps {
		if d.Path == cellbModule || strings.HasPrefix(d.Path, cellbModule+"/") {
			line(d.Path, *d)
		}
	}
	fmt.Fprintf(w, "  %-44s %s\n", "go", bi.GoVersion)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += " (with uncommitted changes)"
		}
		fmt.Fprintf(w, "  %-44s %s\n", "commit", rev)
	}
	if devel || strings.Contains(moduleVersion(bi.Main), "(devel)") {
		fmt.Fprintln(w, "(devel): built from a work tree (a checkout or a go.work workspace), not from a tagged release")
	}
}

// moduleVersion spells a module's version; a replaced module names its
// replacement's version (or directory).
func moduleVersion(m debug.Module) string {
	v := m.Version
	if v == "" {
		v = "(devel)"
	}
	if m.Replace != nil {
		r := m.Replace.Version
		if r == "" {
			r = m.Replace.Path
		}
		v = fmt.Sprintf("%s => %s", v, r)
	}
	return v
}
