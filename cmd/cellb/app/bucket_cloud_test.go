package app

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
)

// requireServer returns the value of the variable a .ci/servers script
// exports, skipping the test outside CI when it is unset and failing it in
// CI, where the server must be running.
func requireServer(t *testing.T, variable, script string) string {
	t.Helper()
	v := os.Getenv(variable)
	if v == "" {
		if serversRequired() {
			t.Fatalf("%s is not set, but the emulators are required (CI=true or CELLB_CI_REQUIRE_EMULATORS=1): .ci/servers/%s should have started a server", variable, script)
		}
		t.Skipf("%s is not set; start a server with: bash .ci/servers/%s start /tmp/srv && source /tmp/srv/env", variable, script)
	}
	return v
}

// useS3 points the AWS SDK, in this process and in the processes it
// starts, at the S3 server of .ci/run with its credentials, and nothing
// else (no shared config files, no instance metadata); it returns the
// server's endpoint.
func useS3(t *testing.T) string {
	t.Helper()
	endpoint := requireServer(t, "CELLB_TEST_S3_ENDPOINT", "versitygw.sh")
	t.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("CELLB_TEST_S3_ACCESS_KEY"))
	t.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("CELLB_TEST_S3_SECRET_KEY"))
	t.Setenv("AWS_REGION", os.Getenv("CELLB_TEST_S3_REGION"))
	t.Setenv("AWS_ENDPOINT_URL_S3", endpoint)
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return endpoint
}

// runDiagnose runs `cellb diagnose` in-process on bucketURL with a 20 MiB
// large object (above the S3 multipart and Azure block thresholds) and
// checks that every case passes.
func runDiagnose(t *testing.T, bucketURL string) {
	t.Helper()
	var out output
	code := run(context.Background(), out.env(), []string{"diagnose", "--large-mib", "20", bucketURL})
	if code != diagnoseOK {
		t.Fatalf("cellb diagnose %s: exit %d\nstdout:\n%s\nstderr:\n%s", bucketURL, code, out.stdout.String(), out.stderr.String())
	}
	if !strings.Contains(out.stdout.String(), "cases passed") {
		t.Fatalf("the report does not say every case passed:\n%s", out.stdout.String())
	}
	t.Logf("cellb diagnose %s:\n%s", bucketURL, out.stdout.String())
}

func TestDiagnoseS3(t *testing.T) {
	useS3(t)
	runDiagnose(t, "s3://"+os.Getenv("CELLB_TEST_S3_BUCKET")+"/diagnose-test")
}

// On fake-gcs-server diagnose tells the emulator's one flaw and nothing
// else: its rewrite ignores the destination's ifGenerationMatch=0, so the
// copy case fails (docs/adapters.md; the adapter's own conformance run on
// the emulator streams copies instead). Every other case passes.
func TestDiagnoseGCS(t *testing.T) {
	endpoint := requireServer(t, "CELLB_TEST_GCS_ENDPOINT", "fake-gcs.sh")
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	bucketURL := "gs://" + os.Getenv("CELLB_TEST_GCS_BUCKET") + "/diagnose-test?endpoint=" + url.QueryEscape(endpoint)
	var out output
	code := run(context.Background(), out.env(), []string{"diagnose", "--large-mib", "20", bucketURL})
	want := fmt.Sprintf("FAILED 1 of %d cases (copy)", len(storetest.Cases()))
	if code != diagnoseFailed || !strings.Contains(out.stdout.String(), want) || !strings.Contains(out.stdout.String(), "want ErrPreconditionFailed") {
		t.Fatalf("cellb diagnose %s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", bucketURL, code, diagnoseFailed, want, out.stdout.String(), out.stderr.String())
	}
}

func TestDiagnoseAzure(t *testing.T) {
	requireServer(t, "CELLB_TEST_AZURE_ENDPOINT", "azurite.sh")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", os.Getenv("CELLB_TEST_AZURE_CONNECTION_STRING"))
	runDiagnose(t, "az://"+os.Getenv("CELLB_TEST_AZURE_CONTAINER")+"/diagnose-test")
}

// A wrong secret and a missing bucket are told as what they are, on one
// short line naming what to check: never "outcome unknown".
func TestRefusedBucketIsToldPlainly(t *testing.T) {
	useS3(t) // each case sets its own secret
	for _, c := range []struct {
		name, secret, bucket, want, hint string
	}{
		{"wrong secret", "not-the-secret", os.Getenv("CELLB_TEST_S3_BUCKET"), "access denied", "AWS_SECRET_ACCESS_KEY"},
		{"missing bucket", os.Getenv("CELLB_TEST_S3_SECRET_KEY"), "no-such-bucket-cellb", "bucket not found", "bucket's name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("AWS_SECRET_ACCESS_KEY", c.secret)
			for _, args := range [][]string{
				{"inspect", "s3://" + c.bucket + "/refused"},
				{"restore", "s3://" + c.bucket + "/refused", "Counter:alice", t.TempDir() + "/out.db"},
			} {
				code, _, stderr := inProcess(t, args...)
				if code == 0 {
					t.Fatalf("cellb %s: exit 0", args[0])
				}
				if !strings.Contains(stderr, c.want) || !strings.Contains(stderr, c.hint) || strings.Contains(stderr, "outcome unknown") {
					t.Errorf("cellb %s: stderr %q: want %q and %q, not an unknown outcome", args[0], stderr, c.want, c.hint)
				}
				for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
					if len(line) > 400 {
						t.Errorf("cellb %s: a %d-character line: %q", args[0], len(line), line)
					}
				}
			}
		})
	}
}

// serversRequired reports whether a missing emulator must fail the test
// rather than skip it: under CI=true, and inside .ci/run, which starts every
// emulator and sets CELLB_CI_REQUIRE_EMULATORS=1 (docs/testing.md).
func serversRequired() bool {
	return os.Getenv("CI") == "true" || os.Getenv("CELLB_CI_REQUIRE_EMULATORS") == "1"
}
