package layering

import (
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
	pkgs := deps(t, prefix+"cmd/cellb")
	if len(pkgs) < 100 {
		t.Fatalf("go list -deps gave %d packages: the scan would see nothing", len(pkgs))
	}
	for _, p := range pkgs {
		if _, bad := matches(p, heavyStacks); bad {
			t.Errorf("the default cellb links %s", p)
		}
	}
}
