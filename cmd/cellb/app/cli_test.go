package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cli"
)

// cliRunner runs one command line and returns its exit status, stdout and
// stderr: in-process through run, or as the built binary.
type cliRunner func(t *testing.T, args ...string) (code int, stdout, stderr string)

func inProcess(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), &env{stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

// builtBinary builds cellb into a temporary directory and returns a runner
// for it.
func builtBinary(t *testing.T) cliRunner {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cellb")
	if out, err := exec.Command("go", "build", "-o", bin, mainDir).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir() // serve's default data directory, if it ever got that far
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}
}

// commandCases are, for each command, the command lines the generic cases
// cannot build: a flag given a bad value, too few arguments, and a runtime
// error (exit 1). nil: the command has no such line (no flag that takes a
// value, no required argument, nothing that can fail at run time). Every
// entry of program() must have an entry here; inspect, repair and id are
// listed as their issue specifies them, and checked once they are in
// program().
var commandCases = map[string]struct{ badValue, missing, runtime []string }{
	"diagnose": {
		badValue: []string{"--large-mib", "many", "file:///nonexistent"},
		missing:  []string{},
		runtime:  []string{"file:///nonexistent/cellb-cli-test"},
	},
	"restore": {
		badValue: []string{"file:///nonexistent", "Counter:x", "out.db", "--txid", "latest"},
		missing:  []string{"file:///nonexistent", "Counter:x"},
		runtime:  []string{"file:///nonexistent/cellb-cli-test", "Counter:x", "out.db"},
	},
	"serve": {
		badValue: []string{"--idle", "soon"},
		runtime:  []string{"--listen", "127.0.0.1:-5"},
	},
	"help":    {},
	"version": {},
	"inspect": {
		badValue: []string{"--json=maybe", "file:///nonexistent"},
		missing:  []string{},
		runtime:  []string{"file:///nonexistent/cellb-cli-test"},
	},
	"repair": {
		badValue: []string{"--apply=maybe", "file:///nonexistent", "Counter:x"},
		missing:  []string{"file:///nonexistent"},
		runtime:  []string{"file:///nonexistent/cellb-cli-test", "Counter:x"},
	},
	"id": {
		missing: []string{"Counter"},
	},
	"import": {
		badValue: []string{"--name=maybe", "file:///nonexistent", "Counter:x", "app.db"},
		missing:  []string{"file:///nonexistent"},
		runtime:  []string{"file:///nonexistent/cellb-cli-test", "Counter:x", "/nonexistent/cellb-cli-test.db"},
	},
}

// TestCLIConventions checks every entry of program(), in-process and as
// the built binary, against the conventions of flags.go (docs/cli.md).
func TestCLIConventions(t *testing.T) {
	t.Run("in-process", func(t *testing.T) { checkConventions(t, inProcess) })
	t.Run("binary", func(t *testing.T) {
		if testing.Short() {
			t.Skip("builds the binary")
		}
		r := builtBinary(t)
		checkConventions(t, r)
		// A test binary of package app records no dependencies; the
		// built cellb lists the CellB modules in it.
		if _, version, _ := r(t, "version"); !strings.Contains(version, "\n  github.com/cellb/cellb/core ") {
			t.Errorf("version lists no github.com/cellb/cellb/core:\n%s", version)
		}
		t.Run("files bucket", func(t *testing.T) { checkFilesBucket(t, r) })
		t.Run("S3 bucket", func(t *testing.T) { checkS3Bucket(t, r) })
	})
}

// checkFilesBucket restores the golden cell with the binary: the result on
// stdout, the progress on stderr from 0%; then the same with --quiet.
func checkFilesBucket(t *testing.T, r cliRunner) {
	const cellKey = "Golden:kv"
	bucket := "file://" + goldenBucket(t, cellKey)
	out := filepath.Join(t.TempDir(), "out.db")
	code, stdout, stderr := r(t, "restore", bucket, cellKey, out)
	if code != 0 || !strings.HasPrefix(stdout, "restored Golden:kv from ") || !strings.HasPrefix(stderr, "restore Golden:kv: 0% (0 B of ") || !strings.Contains(stderr, ": 100% (") {
		t.Fatalf("restore: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	code, _, stderr = r(t, "restore", "--quiet", "--force", bucket, cellKey, out)
	if code != 0 || stderr != "" {
		t.Fatalf("restore --quiet: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = r(t, "restore", bucket, cellKey, out)
	if code != 1 || stderr != "cellb restore: "+out+" exists; pass --force to overwrite it\n" {
		t.Fatalf("restore over an existing file: exit %d, stderr %q", code, stderr)
	}
}

// checkS3Bucket runs the binary against the S3 server: a cell the bucket
// does not hold is a runtime error (exit 1, one line), and a quick
// diagnose exits 3 with its JSON report on stdout and nothing on stderr.
func checkS3Bucket(t *testing.T, r cliRunner) {
	endpoint := requireServer(t, "CELLB_TEST_S3_ENDPOINT", "versitygw.sh")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": os.Getenv("CELLB_TEST_S3_ACCESS_KEY"), "AWS_SECRET_ACCESS_KEY": os.Getenv("CELLB_TEST_S3_SECRET_KEY"),
		"AWS_REGION": os.Getenv("CELLB_TEST_S3_REGION"), "AWS_ENDPOINT_URL_S3": endpoint,
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	bucket := fmt.Sprintf("s3://%s/cli-test-%d", os.Getenv("CELLB_TEST_S3_BUCKET"), time.Now().UnixNano())
	code, _, stderr := r(t, "restore", bucket, "Counter:nothing-here", filepath.Join(t.TempDir(), "out.db"))
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "holds no ltx, changeset or backup files") {
		t.Errorf("restore of a cell S3 does not hold: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := r(t, "diagnose", "--quick", "--json", "--quiet", bucket)
	var rep struct {
		OK       bool `json:"ok"`
		ExitCode int  `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); code != diagnoseIncomplete || err != nil || stderr != "" {
		t.Errorf("diagnose --quick --json --quiet on S3: exit %d, %v\nstdout %s\nstderr %q", code, err, stdout, stderr)
	}
}

// wantUsageError checks a usage error: exit 2, nothing on stdout, and on
// stderr exactly "cellb <cmd>: <first>...\n" and the hint.
func wantUsageError(t *testing.T, r cliRunner, cmd, first string, args ...string) {
	t.Helper()
	code, stdout, stderr := r(t, args...)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	hint := "run 'cellb help " + cmd + "' for usage"
	if code != cli.ExitUsage || stdout != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "cellb "+cmd+": "+first) || lines[1] != hint {
		t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and two lines on stderr: %q..., %q", args, code, stdout, stderr, "cellb "+cmd+": "+first, hint)
	}
	if strings.Contains(stderr, "flag provided but not defined") || strings.Contains(stderr, "usage:") {
		t.Errorf("%q: stderr has Go's wording or the whole usage: %q", args, stderr)
	}
}

func checkConventions(t *testing.T, r cliRunner) {
	cmds := program(nil).Commands()
	for _, c := range cmds {
		t.Run(c.Name, func(t *testing.T) {
			cases, ok := commandCases[c.Name]
			if !ok {
				t.Fatalf("command %q has no entry in commandCases: add its bad-value, missing-argument and runtime-error lines", c.Name)
			}
			// --help, -h and help <cmd>: the same usage, on stdout, exit 0.
			code, help, stderr := r(t, c.Name, "--help")
			if code != 0 || stderr != "" || !strings.HasPrefix(help, "usage: cellb "+c.Name) {
				t.Fatalf("%s --help: exit %d, stdout %q, stderr %q", c.Name, code, help, stderr)
			}
			for _, args := range [][]string{{c.Name, "-h"}, {"help", c.Name}, {c.Name, "some-arg", "--help"}} {
				code, stdout, stderr := r(t, args...)
				if code != 0 || stderr != "" || stdout != help {
					t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 0 and the --help text on stdout", args, code, stdout, stderr)
				}
			}
			wantUsageError(t, r, c.Name, "unknown flag --no-such-flag", c.Name, "--no-such-flag")
			wantUsageError(t, r, c.Name, "unexpected argument", c.Name, "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9")
			if cases.badValue != nil {
				wantUsageError(t, r, c.Name, "bad value", append([]string{c.Name}, cases.badValue...)...)
			}
			if cases.missing != nil {
				wantUsageError(t, r, c.Name, "missing arguments", append([]string{c.Name}, cases.missing...)...)
			}
			if cases.runtime != nil {
				args := append([]string{c.Name}, cases.runtime...)
				code, _, stderr := r(t, args...)
				if code != cli.ExitFailed || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "cellb "+c.Name+": ") {
					t.Errorf("%q: exit %d, stderr %q; want exit 1 and one line", args, code, stderr)
				}
			}
		})
	}
	t.Run("top level", func(t *testing.T) {
		code, stdout, stderr := r(t)
		if code != cli.ExitUsage || stdout != "" || !strings.HasPrefix(stderr, "usage: cellb <command>") {
			t.Errorf("no arguments: exit %d, stdout %q, stderr %q; want the usage on stderr, exit 2", code, stdout, stderr)
		}
		code, help, stderr := r(t, "help")
		if code != 0 || stderr != "" {
			t.Fatalf("help: exit %d, stderr %q", code, stderr)
		}
		for _, c := range cmds {
			if !strings.Contains(help, "\n  "+c.Name+" ") {
				t.Errorf("help does not list %s:\n%s", c.Name, help)
			}
		}
		for _, flag := range []string{"--help", "-h"} {
			if code, stdout, stderr := r(t, flag); code != 0 || stdout != help || stderr != "" {
				t.Errorf("cellb %s: exit %d, stdout %q, stderr %q; want help's text on stdout", flag, code, stdout, stderr)
			}
		}
		for args, want := range map[string]string{
			"nope":      `cellb: unknown command "nope"`,
			"--nope":    `cellb: unknown flag "--nope"`,
			"help nope": `cellb help: unknown command "nope"`,
		} {
			code, stdout, stderr := r(t, strings.Fields(args)...)
			if code != cli.ExitUsage || stdout != "" || strings.Count(stderr, "\n") != 2 || !strings.HasPrefix(stderr, want+"\n") {
				t.Errorf("cellb %s: exit %d, stdout %q, stderr %q; want exit 2 and %q plus a hint", args, code, stdout, stderr, want)
			}
		}
		code, version, stderr := r(t, "version")
		if code != 0 || stderr != "" || !strings.HasPrefix(version, "cellb ") || !strings.Contains(version, "\n  github.com/cellb/cellb/") {
			t.Errorf("version: exit %d, stderr %q, stdout:\n%s", code, stderr, version)
		}
		if code, stdout, _ := r(t, "--version"); code != 0 || stdout != version {
			t.Errorf("--version: exit %d, stdout %q, want version's", code, stdout)
		}
	})
}

// TestCommandCasesCoverTheIssue: the cases prepared for the commands other
// changes add are not dead entries for commands that never existed.
func TestCommandCasesNameKnownCommands(t *testing.T) {
	planned := []string{"inspect", "repair", "id"}
	for name := range commandCases {
		if _, ok := program(nil).Lookup(name); !ok && !slices.Contains(planned, name) {
			t.Errorf("commandCases has %q, which is not a command", name)
		}
	}
}
