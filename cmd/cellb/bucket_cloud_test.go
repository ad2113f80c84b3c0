package main

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
)

// requireServer returns the value of the variable a .ci/servers script
// exports, skipping the test outside CI when it is unset and failing it in
// CI, where the server must be running.
func requireServer(t *testing.T, variable, script string) string {
	t.Helper()
	v := os.Getenv(variable)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set, but CI=true: .ci/servers/%s should have started a server", variable, script)
		}
		t.Skipf("%s is not set; start a server with: bash .ci/servers/%s start /tmp/srv && source /tmp/srv/env", variable, script)
	}
	return v
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
	endpoint := requireServer(t, "CELLB_TEST_S3_ENDPOINT", "versitygw.sh")
	t.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("CELLB_TEST_S3_ACCESS_KEY"))
	t.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("CELLB_TEST_S3_SECRET_KEY"))
	t.Setenv("AWS_REGION", os.Getenv("CELLB_TEST_S3_REGION"))
	t.Setenv("AWS_ENDPOINT_URL_S3", endpoint)
	// Keep the SDK away from shared config files and instance metadata.
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	runDiagnose(t, "s3://"+os.Getenv("CELLB_TEST_S3_BUCKET")+"/diagnose-test")
}

func TestDiagnoseGCS(t *testing.T) {
	endpoint := requireServer(t, "CELLB_TEST_GCS_ENDPOINT", "fake-gcs.sh")
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	runDiagnose(t, "gs://"+os.Getenv("CELLB_TEST_GCS_BUCKET")+"/diagnose-test?endpoint="+url.QueryEscape(endpoint))
}

func TestDiagnoseAzure(t *testing.T) {
	requireServer(t, "CELLB_TEST_AZURE_ENDPOINT", "azurite.sh")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", os.Getenv("CELLB_TEST_AZURE_CONNECTION_STRING"))
	runDiagnose(t, "az://"+os.Getenv("CELLB_TEST_AZURE_CONTAINER")+"/diagnose-test")
}
