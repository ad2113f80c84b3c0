package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// VersionEntry is a program's version command: it prints what the Go build
// recorded (runtime/debug.ReadBuildInfo) of the program's module and of
// every module under family (WriteVersion); Program runs it for --version
// too. what names those modules in its texts: "CellB" says "the CellB
// modules".
func VersionEntry(prog, family, what string) Entry {
	return Entry{Name: "version", Summary: "print the versions of " + prog + " and of the " + what + " modules built into it",
		Run: func(_ context.Context, stdout, stderr io.Writer, args []string) int {
			cl := New(prog, "version", "", fmt.Sprintf(`Prints the version of the %s module and of every %s module built into
this binary, as the Go build recorded them (runtime/debug.ReadBuildInfo).
"(devel)" means the module was built from a work tree (a checkout or a
go.work workspace), not from a tagged release; the commit is printed when
the build recorded it. "%s --version" is the same command.`, prog, what, prog), 0, 0, "no arguments")
			if _, code, done := cl.Parse(stdout, stderr, args); done {
				return code
			}
			bi, ok := debug.ReadBuildInfo()
			if !ok {
				return cl.Fail(stderr, errors.New("this binary carries no build information (built without module support)"))
			}
			WriteVersion(stdout, prog, bi, family)
			return ExitOK
		}}
}

// WriteVersion prints what bi says of the program's versions: the main
// module, then every module whose path is family or under it, then the Go
// version and the commit when the build recorded one, and a note when a
// module was built from a work tree ("(devel)": a checkout or a go.work
// workspace, not a tagged release).
func WriteVersion(w io.Writer, prog string, bi *debug.BuildInfo, family string) {
	devel := false
	line := func(name string, m debug.Module) {
		v := moduleVersion(m)
		devel = devel || strings.Contains(v, "(devel)")
		fmt.Fprintf(w, "  %-44s %s\n", name, v)
	}
	fmt.Fprintf(w, "%s %s\n", prog, moduleVersion(bi.Main))
	if bi.Main.Path != "" {
		line(bi.Main.Path, bi.Main)
	}
	for _, d := range bi.Deps {
		if d.Path == family || strings.HasPrefix(d.Path, family+"/") {
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
