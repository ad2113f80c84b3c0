package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// heavyStacks are dependency stacks the default cellb binary must not
// link: each made a cold first build (the README's first command) slower
// by tens of seconds on two cores for nothing the binary uses. gRPC,
// Envoy's xDS and the GCS SDK came with cloud.google.com/go/storage (the
// GCS adapter speaks the JSON API instead); Arrow and go-json came with
// azblob v1.8.1's query results (azblob is held at v1.8.0); client_model,
// expfmt, procfs and protobuf came with the OpenTelemetry Prometheus
// exporter and client_golang (cmd/cellb/internal/promtext writes the text
// format instead; the tests still compare with them).
var heavyStacks = []string{
	"cloud.google.com/go/storage",
	"google.golang.org/grpc",
	"google.golang.org/api",
	"github.com/envoyproxy",
	"github.com/apache/arrow-go",
	"github.com/goccy/go-json",
	"github.com/prometheus",
	"go.opentelemetry.io/otel/exporters",
	"google.golang.org/protobuf",
}

// TestDefaultCLILinksNoHeavyStacks checks the default build of cmd/cellb
// (no build tags) against heavyStacks.
func TestDefaultCLILinksNoHeavyStacks(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{.ImportPath}}", prefix+"cmd/cellb")
	cmd.Dir = workspaceRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	lines := strings.Split(string(out), "\n")
	if len(lines) < 100 {
		t.Fatalf("go list -deps gave %d packages: the scan would see nothing", len(lines))
	}
	for _, line := range lines {
		for _, bad := range heavyStacks {
			if line == bad || strings.HasPrefix(line, bad+"/") {
				t.Errorf("the default cellb links %s", line)
			}
		}
	}
}
