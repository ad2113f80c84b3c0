package fleet

import (
	"strings"
	"testing"
)

func TestUnroutableAddr(t *testing.T) {
	if !strings.HasSuffix(UnroutableAddr("node_q"), ".cellb.invalid:9") {
		t.Fatal(UnroutableAddr("node_q"))
	}
}
