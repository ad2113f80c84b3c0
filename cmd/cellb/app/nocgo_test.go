package app

import (
	"debug/buildinfo"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildsWithoutCgo builds cellb as a machine without a C compiler
// would (CGO_ENABLED=0): the build works, the README's `cellb serve` serves
// the counter on its default driver, and --driver cgo and --driver modernc
// (not in a build without their tags) are refused before anything starts,
// saying how to get a cellb that has them.
func TestBuildsWithoutCgo(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "cellb")
	build := exec.Command("go", "build", "-o", bin, mainDir)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	cgoSetting := ""
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" {
			cgoSetting = s.Value
		}
	}
	if cgoSetting != "0" {
		t.Fatalf("the binary was built with CGO_ENABLED=%q, want 0", cgoSetting)
	}

	serve := exec.Command(bin, "serve", "--driver", "cgo", "--listen", "127.0.0.1:0", "--data", t.TempDir())
	var stderr strings.Builder
	serve.Stderr = &stderr
	err = serve.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("serve --driver cgo: %v, want exit status 2; stderr:\n%s", err, stderr.String())
	}
	first, _, _ := strings.Cut(stderr.String(), "\n")
	want := "cellb serve: --driver cgo: " + errNoCgo.Error()
	if first != want {
		t.Fatalf("serve --driver cgo said\n%s\nwant\n%s", first, want)
	}
	for _, how := range []string{"built without the cgo driver", "-tags cellb_cgo", "CGO_ENABLED=1", "C compiler", "--driver wasm"} {
		if !strings.Contains(first, how) {
			t.Fatalf("serve --driver cgo said %q, which does not say %q", first, how)
		}
	}
	// A default build leaves modernc out too: --driver modernc, the
	// changeset mode and the restore of a changeset log say how to get it.
	for _, args := range [][]string{
		{"serve", "--driver", "modernc", "--listen", "127.0.0.1:0", "--data", t.TempDir()},
		{"serve", "--durability", "changeset", "--driver", "modernc", "--listen", "127.0.0.1:0", "--data", t.TempDir()},
	} {
		cmd := exec.Command(bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), errNoModernc.Error()) {
			t.Fatalf("cellb %v: %v, want exit status 2 and %q; stderr:\n%s", args, err, errNoModernc, stderr.String())
		}
	}

	p := startServe(t, bin, "nocgo", "--data", t.TempDir())
	resp, err := http.Post(p.url+"/counter/apples", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"value":1}` {
		t.Fatalf("POST /counter/apples on a cellb without cgo: %d %s", resp.StatusCode, body)
	}
}

// An unknown --driver is a usage error too, named before anything starts.
func TestServeRefusesUnknownDriver(t *testing.T) {
	_, err := parseServe([]string{"--driver", "sqlite"})
	if err == nil || err.Error() != `--driver sqlite: unknown driver "sqlite" (want wasm, cgo or modernc)` {
		t.Fatalf("parseServe --driver sqlite: %v", err)
	}
}

// TestDefaultBuildLeavesOutOptionalDrivers: the default build links neither
// SQLite translated to Go (modernc) nor SQLite's C source (cgo), so a first
// `go run ./cmd/cellb serve` compiles neither; the tags bring them in.
func TestDefaultBuildLeavesOutOptionalDrivers(t *testing.T) {
	deps := func(tags string) string {
		args := []string{"list", "-deps"}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		cmd := exec.Command("go", append(args, mainDir)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	optional := []string{"modernc.org/sqlite/lib\n", "github.com/cellb/cellb/drivers/modernc\n", "github.com/cellb/cellb/drivers/cgo\n"}
	def := deps("")
	for _, p := range optional {
		if strings.Contains(def, p) {
			t.Errorf("the default build links %s", strings.TrimSpace(p))
		}
	}
	if !strings.Contains(def, "github.com/cellb/cellb/drivers/wasm\n") {
		t.Error("the default build lacks the wasm driver")
	}
	all := deps("cellb_cgo,cellb_modernc")
	for _, p := range optional {
		if !strings.Contains(all, p) {
			t.Errorf("-tags cellb_cgo,cellb_modernc does not link %s", strings.TrimSpace(p))
		}
	}
}
