package main

import (
	"regexp"
	"strings"
	"testing"
)

// A run with a pass, a skip, a failure and a package without tests, as
// `go test -json` prints it (trimmed to the fields read).
const sample = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestOK"}
{"Action":"output","Package":"m/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"m/a","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestOK"}
{"Action":"run","Package":"m/a","Test":"TestServer"}
{"Action":"output","Package":"m/a","Test":"TestServer","Output":"=== RUN   TestServer\n"}
{"Action":"output","Package":"m/a","Test":"TestServer","Output":"    store_test.go:36: CELLB_TEST_S3_ENDPOINT is not set\n"}
{"Action":"output","Package":"m/a","Test":"TestServer","Output":"--- SKIP: TestServer (0.00s)\n"}
{"Action":"skip","Package":"m/a","Test":"TestServer"}
{"Action":"output","Package":"m/a","Output":"PASS\n"}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t0.1s\n"}
{"Action":"pass","Package":"m/a"}
{"Action":"run","Package":"m/b","Test":"TestBroken"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"    b_test.go:9: want 2, got 3\n"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}
{"Action":"fail","Package":"m/b","Test":"TestBroken"}
{"Action":"output","Package":"m/b","Output":"FAIL\n"}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t0.2s\n"}
{"Action":"fail","Package":"m/b"}
{"Action":"output","Package":"m/c","Output":"?   \tm/c\t[no test files]\n"}
{"Action":"skip","Package":"m/c"}
go: downloading nothing
`

func TestSummary(t *testing.T) {
	var out strings.Builder
	code := run(strings.NewReader(sample), &out, nil)
	want := "ok  \tm/a\t0.1s\n" +
		"    b_test.go:9: want 2, got 3\n--- FAIL: TestBroken (0.00s)\nFAIL\nFAIL\tm/b\t0.2s\n" +
		"?   \tm/c\t[no test files]\n" +
		"go: downloading nothing\n" +
		"== skipped: 1 tests\n   m/a TestServer: CELLB_TEST_S3_ENDPOINT is not set\n" +
		"== tests: 1 passed, 1 skipped\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	if code != 1 {
		t.Errorf("exit status %d with a failed test, want 1", code)
	}
}

func TestSummaryPasses(t *testing.T) {
	var out strings.Builder
	passing := strings.Split(sample, `{"Action":"run","Package":"m/b"`)[0]
	if code := run(strings.NewReader(passing), &out, nil); code != 0 {
		t.Errorf("exit status %d without a failure, want 0:\n%s", code, out.String())
	}
	// A skip whose reason -require matches fails the run.
	out.Reset()
	if code := run(strings.NewReader(passing), &out, regexp.MustCompile(`CELLB_TEST_(S3|GCS|AZURE)_`)); code != 1 || !strings.Contains(out.String(), "FAIL: m/a TestServer skipped") {
		t.Errorf("a required skip: exit status %d:\n%s", code, out.String())
	}
	out.Reset()
	if code := run(strings.NewReader(passing), &out, regexp.MustCompile(`CELLB_LITESTREAM`)); code != 0 {
		t.Errorf("a skip -require does not match: exit status %d:\n%s", code, out.String())
	}
}
