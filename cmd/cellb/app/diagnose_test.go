package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/storetest/brokenstore"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

type output struct{ stdout, stderr bytes.Buffer }

func (o *output) env() *env { return &env{stdout: &o.stdout, stderr: &o.stderr} }

// unwritable fails every write, like a bucket without write permission.
type unwritable struct{ store.Store }

func (unwritable) Put(_ context.Context, key string, _ []byte, _ store.PutOptions) (store.Version, error) {
	return "", &store.OpError{Op: "put", Key: key, Err: errors.New("403 AccessDenied\nrequest id 1234")}
}

func testSchemes(buckets map[string]*memstore.Store) *store.URLMux {
	m := memMux(buckets)
	wrapped := func(name string, wrap func(store.Store) store.Store) {
		inner := memstore.New()
		m.Register(store.URLScheme{Name: name, Opener: store.URLOpenerFunc(func(context.Context, *store.BucketURL) (store.Store, error) {
			return wrap(inner), nil
		})})
	}
	wrapped("broken", brokenstore.IgnoreIfNoneMatch)
	wrapped("readonly", func(s store.Store) store.Store { return unwritable{s} })
	return m
}

func TestDiagnosePassingBucket(t *testing.T) {
	base := memstore.New()
	var out output
	code := diagnose(t.Context(), out.env(), []string{"mem://b/some/prefix"}, testSchemes(map[string]*memstore.Store{"b": base}))
	if code != diagnoseOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &out.stdout, &out.stderr)
	}
	table := out.stdout.String()
	if !strings.HasPrefix(table, "CASE") || !strings.Contains(table, "RESULT") || !strings.Contains(table, "REASON") {
		t.Fatalf("no table header:\n%s", table)
	}
	for _, c := range storetest.Cases() {
		if !strings.Contains(table, "\n"+c.Name+" ") {
			t.Errorf("no row for %s", c.Name)
		}
	}
	if want := fmt.Sprintf("mem://b/some/prefix: all %d cases passed\n", len(storetest.Cases())); !strings.Contains(table, want) {
		t.Errorf("summary line missing:\n%s", table)
	}
	if !strings.Contains(out.stderr.String(), "large-object: uploaded 64 MiB") {
		t.Errorf("no progress for the large object on stderr:\n%s", &out.stderr)
	}
	if base.Len() != 0 {
		t.Fatalf("diagnose left %d objects in the bucket", base.Len())
	}
}

func TestDiagnoseQuickIsIncomplete(t *testing.T) {
	var out output
	code := diagnose(t.Context(), out.env(), []string{"mem://b", "--quick"}, testSchemes(map[string]*memstore.Store{"b": memstore.New()}))
	if code != diagnoseIncomplete {
		t.Fatalf("exit %d, want %d\n%s", code, diagnoseIncomplete, &out.stdout)
	}
	table := out.stdout.String()
	n := len(storetest.Cases())
	for _, want := range []string{"\nlarge-object ", "  skip  ", "skipped by --quick", fmt.Sprintf("%d of %d cases passed, 4 skipped: not every case ran", n-4, n)} {
		if !strings.Contains(table, want) {
			t.Errorf("output lacks %q:\n%s", want, table)
		}
	}
}

func TestDiagnoseJSON(t *testing.T) {
	var out output
	code := diagnose(t.Context(), out.env(), []string{"--json", "mem://b", "--large-mib", "1"}, testSchemes(map[string]*memstore.Store{"b": memstore.New()}))
	if code != diagnoseOK {
		t.Fatalf("exit %d\n%s", code, &out.stderr)
	}
	var rep storetest.BucketReport
	if err := json.Unmarshal(out.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, &out.stdout)
	}
	if !rep.OK || !rep.Complete || rep.ExitCode != 0 || len(rep.Cases) != len(storetest.Cases()) || rep.Bucket != "mem://b" {
		t.Fatalf("report: %+v", rep)
	}
	if len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "large-object lowered to 1 MiB") {
		t.Fatalf("the lowered size is not reported: %q", rep.Notes)
	}
	for _, c := range rep.Cases {
		if c.Result != "pass" || c.Seconds < 0 {
			t.Errorf("case %+v", c)
		}
	}
}

func TestDiagnoseBrokenBucketFails(t *testing.T) {
	var out output
	code := diagnose(t.Context(), out.env(), []string{"broken://b", "--large-mib=1"}, testSchemes(nil))
	if code != diagnoseFailed {
		t.Fatalf("exit %d, want %d\n%s", code, diagnoseFailed, &out.stdout)
	}
	table := out.stdout.String()
	want := fmt.Sprintf("broken://b: FAILED 5 of %d cases (probe, create-only, stream-conditions, copy, contention-create)", len(storetest.Cases()))
	for _, want := range []string{"\ncreate-only ", "  FAIL  ", "ignores If-None-Match", want} {
		if !strings.Contains(table, want) {
			t.Errorf("output lacks %q:\n%s", want, table)
		}
	}
}

func TestDiagnoseUnwritableBucket(t *testing.T) {
	var out output
	code := diagnose(t.Context(), out.env(), []string{"readonly://b"}, testSchemes(nil))
	if code != diagnoseFailed {
		t.Fatalf("exit %d", code)
	}
	msg := out.stderr.String()
	if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "cellb diagnose: cannot write to readonly://b: ") || !strings.Contains(msg, "403 AccessDenied") {
		t.Fatalf("want one line naming the failure, got %q", msg)
	}
	if out.stdout.Len() != 0 {
		t.Fatalf("a table was printed for an unusable bucket:\n%s", &out.stdout)
	}

	var js output
	if code := diagnose(t.Context(), js.env(), []string{"readonly://b", "--json"}, testSchemes(nil)); code != diagnoseFailed {
		t.Fatalf("exit %d with --json", code)
	}
	var rep storetest.BucketReport
	if err := json.Unmarshal(js.stdout.Bytes(), &rep); err != nil || rep.OK || !strings.Contains(rep.Error, "403") {
		t.Fatalf("JSON error report: %v %+v", err, rep)
	}
}

func TestDiagnoseUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diagnose"}, diagnoseUsage, "missing arguments: want one bucket URL, got 0"},
		{[]string{"diagnose", "a", "b"}, diagnoseUsage, `unexpected argument "b": want one bucket URL`},
		{[]string{"diagnose", "--bogus", "x"}, diagnoseUsage, "unknown flag --bogus"},
		{[]string{"diagnose", "--large-mib", "0", "x"}, diagnoseUsage, "at least 1"},
		{[]string{"diagnose", "nope://x"}, diagnoseFailed, `cellb diagnose: bad bucket URL "nope://x": unknown scheme "nope"`},
		{[]string{"diagnose", "file://host/x"}, diagnoseFailed, "three slashes"},
	} {
		var out output
		code := run(t.Context(), out.env(), tc.args)
		if code != tc.code || !strings.Contains(out.stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d saying %q", tc.args, code, &out.stderr, tc.code, tc.want)
		}
	}
	var out output
	if code := run(t.Context(), out.env(), []string{"diagnose", "--help"}); code != 0 || !strings.Contains(out.stdout.String(), "Exit status") {
		t.Fatalf("--help: exit %d\n%s", code, &out.stdout)
	}
	out = output{}
	if code := run(t.Context(), out.env(), []string{"help"}); code != 0 || !strings.Contains(out.stdout.String(), "diagnose") {
		t.Fatalf("the command table does not list diagnose:\n%s", &out.stdout)
	}
}

// TestDiagnoseFileBucket runs the whole command, as a user would, on a
// fresh local directory.
func TestDiagnoseFileBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite on the local file system")
	}
	dir := t.TempDir()
	var out output
	code := run(t.Context(), out.env(), []string{"diagnose", "file://" + dir, "--large-mib", "8"})
	if code != diagnoseOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &out.stdout, &out.stderr)
	}
	want := fmt.Sprintf("file://%s: all %d cases passed\n", dir, len(storetest.Cases()))
	if !strings.HasPrefix(out.stdout.String(), "CASE") || !strings.HasSuffix(out.stdout.String(), want) {
		t.Fatalf("stdout:\n%s", &out.stdout)
	}
	if !strings.Contains(out.stdout.String(), "note: large-object lowered to 8 MiB") {
		t.Fatalf("the lowered size is not noted:\n%s", &out.stdout)
	}
}

func TestDiagnoseUnusableDirectories(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, want string }{
		{"file://" + file + "/sub", "not a directory"},
		{file, "not a directory"},
		{"file://" + filepath.Join(t.TempDir(), "missing"), "does not exist; create it first (mkdir -p "},
		// Root may write anywhere, but not into /proc.
		{"file:///proc", "cannot write to file:///proc: bucket probe failed at step 1 (create-only)"},
	} {
		var out output
		code := run(t.Context(), out.env(), []string{"diagnose", tc.url})
		msg := out.stderr.String()
		if code != diagnoseFailed || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "cellb diagnose: ") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line saying %q", tc.url, code, msg, tc.want)
		}
		if out.stdout.Len() != 0 {
			t.Errorf("%s: printed a table for an unusable bucket", tc.url)
		}
	}
}
