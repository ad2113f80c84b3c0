package main

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/cellb/cellb/adapters/s3"
)

func cloudLocation(t *testing.T, raw string) bucketLocation {
	t.Helper()
	_, loc, err := parseBucketURL(raw, bucketSchemes())
	if err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	return loc
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestS3Options(t *testing.T) {
	cases := []struct {
		url  string
		env  map[string]string
		want s3.Options
	}{
		{"s3://b/p", nil, s3.Options{Bucket: "b"}},
		{"s3://b", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}, s3.Options{Bucket: "b", Endpoint: "http://127.0.0.1:9000", UsePathStyle: true}},
		{"s3://b", map[string]string{"AWS_ENDPOINT_URL": "http://a", "AWS_ENDPOINT_URL_S3": "http://s3"}, s3.Options{Bucket: "b", Endpoint: "http://s3", UsePathStyle: true}},
		{"s3://b?endpoint=https://x.r2.example&path-style=false&region=auto", map[string]string{"AWS_ENDPOINT_URL_S3": "http://s3"}, s3.Options{Bucket: "b", Endpoint: "https://x.r2.example", Region: "auto"}},
		{"s3://b", map[string]string{"CELLB_S3_PATH_STYLE": "true"}, s3.Options{Bucket: "b", UsePathStyle: true}},
	}
	for _, c := range cases {
		got, err := s3Options(cloudLocation(t, c.url), envOf(c.env))
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if got.Bucket != c.want.Bucket || got.Endpoint != c.want.Endpoint || got.Region != c.want.Region || got.UsePathStyle != c.want.UsePathStyle {
			t.Errorf("%s with %v: got %+v, want %+v", c.url, c.env, got, c.want)
		}
	}
	for _, bad := range []string{"s3://b?path-style=maybe", "s3://b?endpiont=x", "s3://b?region=a&region=b"} {
		if _, err := s3Options(cloudLocation(t, bad), envOf(nil)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

func TestGCSOptions(t *testing.T) {
	got, err := gcsOptions(cloudLocation(t, "gs://b/p"), envOf(nil))
	if err != nil || got.Bucket != "b" || got.Endpoint != "" || got.Anonymous {
		t.Errorf("plain: %+v %v", got, err)
	}
	got, err = gcsOptions(cloudLocation(t, "gs://b"), envOf(map[string]string{"CELLB_GCS_ENDPOINT": "http://127.0.0.1:4443/"}))
	if err != nil || got.Endpoint != "http://127.0.0.1:4443/storage/v1/" || !got.Anonymous {
		t.Errorf("local endpoint: %+v %v", got, err)
	}
	got, err = gcsOptions(cloudLocation(t, "gs://b?endpoint=https://storage.example&anonymous=false"), envOf(nil))
	if err != nil || got.Endpoint != "https://storage.example/storage/v1/" || got.Anonymous {
		t.Errorf("remote endpoint: %+v %v", got, err)
	}
	if _, err := gcsOptions(cloudLocation(t, "gs://b?anonymous=perhaps"), envOf(nil)); err == nil {
		t.Error("a bad anonymous value was accepted")
	}
}

func TestAzureOptions(t *testing.T) {
	got, err := azureOptions(cloudLocation(t, "az://c/p"), envOf(map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "cs", "AZURE_STORAGE_ACCOUNT": "ignored"}))
	if err != nil || got.ConnectionString != "cs" || got.Container != "c" || got.Account != "" {
		t.Errorf("connection string: %+v %v", got, err)
	}
	got, err = azureOptions(cloudLocation(t, "az://c"), envOf(map[string]string{"AZURE_STORAGE_ACCOUNT": "acct", "AZURE_STORAGE_KEY": "k", "CELLB_AZURE_ENDPOINT": "http://127.0.0.1:10000/acct"}))
	if err != nil || got.Account != "acct" || got.AccountKey != "k" || got.ServiceURL != "http://127.0.0.1:10000/acct" {
		t.Errorf("shared key: %+v %v", got, err)
	}
	got, err = azureOptions(cloudLocation(t, "az://c?account=acct"), envOf(nil))
	if err != nil || got.Container != "c" || got.Account != "acct" || got.AccountKey != "" || got.ServiceURL != "" || got.ConnectionString != "" {
		t.Errorf("default credential chain: %+v %v", got, err)
	}
	for _, c := range []struct {
		url string
		env map[string]string
	}{
		{"az://c", nil},
		{"az://c?endpoint=http://h/a", map[string]string{"AZURE_STORAGE_KEY": "k"}},
		{"az://c?account=a", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "cs"}},
		{"az://c?container=x", nil},
	} {
		if _, err := azureOptions(cloudLocation(t, c.url), envOf(c.env)); err == nil {
			t.Errorf("%s with %v was accepted", c.url, c.env)
		}
	}
}

func TestIsLoopbackURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"http://127.0.0.1:4443": true, "http://localhost/": true, "http://[::1]:80": true,
		"https://storage.example": false, "127.0.0.1": false, "http://10.0.0.1": false,
	} {
		if got := isLoopbackURL(raw); got != want {
			t.Errorf("isLoopbackURL(%q) = %v", raw, got)
		}
	}
}

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
