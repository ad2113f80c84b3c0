package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// counterCall is one call of a client to the counter app (POST
// /counter/<name> increments and answers the new value once durable, GET
// reads it), as the history checker sees it.
type counterCall struct {
	Client int    `json:"client"`
	Cell   string `json:"cell"` // the counter's name
	Inc    bool   `json:"inc"`  // POST (increment), else GET (read)
	// Call and Return are nanoseconds since the run began, read just
	// before the request was sent and just after its answer was read.
	// Return is unknownReturn when the outcome is unknown.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
	// Value is the value answered (Outcome "ok" only).
	Value int64 `json:"value"`
	// Outcome is "ok", or for an increment whose outcome is unknown why
	// ("unknown: 503 ...", "unknown: timeout", ...).
	Outcome string `json:"outcome"`
	// Node and Epoch are the answering writer's X-Cellb-Node and
	// X-Cellb-Epoch.
	Node  string `json:"node,omitempty"`
	Epoch string `json:"epoch,omitempty"`
}

// unknownReturn is the return time of a call whose outcome is unknown: it
// may take effect at any moment after it was sent, or never (porcupine
// then places it after everything else, where it changes nothing).
const unknownReturn = math.MaxInt64

func (c counterCall) unknown() bool { return c.Return == unknownReturn }

// counterInput and counterOutput are the model's operation.
type counterInput struct {
	Cell string
	Inc  bool
}

type counterOutput struct {
	Value   int64
	Unknown bool // an increment that may or may not have been applied
}

// counterModel is the sequential specification of one counter: an
// increment adds one and answers the new value, a read answers the value,
// and an increment whose outcome is unknown leaves the counter either as
// it was or one higher. That choice makes the model nondeterministic:
// porcupine's power-set construction (NondeterministicModel.ToModel) runs
// it with a set of possible values as the state, so an unknown increment
// costs the search nothing until a later answer settles it. (As a
// deterministic "always applied" step with its return at infinity, the
// search tried every subset of a counter's unknown increments: a history
// of 5,000 calls with 250 unknown increments was not decided in minutes.)
// Partitioned by counter: counters are independent cells.
var counterModel = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byCell := map[string][]porcupine.Operation{}
		for _, op := range history {
			c := op.Input.(counterInput).Cell
			byCell[c] = append(byCell[c], op)
		}
		out := make([][]porcupine.Operation, 0, len(byCell))
		for _, c := range slices.Sorted(maps.Keys(byCell)) {
			out = append(out, byCell[c])
		}
		return out
	},
	Init: func() []any { return []any{int64(0)} },
	Step: func(state, input, output any) []any {
		v := state.(int64)
		in, out := input.(counterInput), output.(counterOutput)
		switch {
		case out.Unknown:
			return []any{v, v + 1}
		case !in.Inc && out.Value == v, in.Inc && out.Value == v+1:
			return []any{out.Value}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(int64) == b.(int64) },
	Hash:  func(s any) uint64 { return uint64(s.(int64)) * 0x9e3779b97f4a7c15 },
	DescribeOperation: func(input, output any) string {
		in, out := input.(counterInput), output.(counterOutput)
		switch {
		case !in.Inc:
			return fmt.Sprintf("read %s -> %d", in.Cell, out.Value)
		case out.Unknown:
			return fmt.Sprintf("inc %s -> ?", in.Cell)
		default:
			return fmt.Sprintf("inc %s -> %d", in.Cell, out.Value)
		}
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
	DescribeOperationMetadata: func(info any) string {
		if info == nil {
			return ""
		}
		return info.(string)
	},
}).ToModel()

func (c counterCall) operation() porcupine.Operation {
	meta := c.Outcome
	if c.Node != "" {
		meta = fmt.Sprintf("%s (node %s, epoch %s)", c.Outcome, c.Node, c.Epoch)
	}
	return porcupine.Operation{
		ClientId: c.Client,
		Input:    counterInput{Cell: c.Cell, Inc: c.Inc},
		Call:     c.Call,
		Output:   counterOutput{Value: c.Value, Unknown: c.unknown()},
		Return:   c.Return,
		Metadata: meta,
	}
}

// historyCheck is what checkCounterHistory found.
type historyCheck struct {
	Ops, Acked, Unknown, Reads int      // operations checked, by kind
	Cells                      int      // partitions
	Illegal                    []string // counters whose history is not linearizable
	TimedOut                   []string // counters the checker could not decide in time
	Visualization              string   // the HTML file, when something was not linearizable
}

// ok reports whether every counter's history was found linearizable.
func (h historyCheck) ok() bool { return len(h.Illegal) == 0 && len(h.TimedOut) == 0 }

func (h historyCheck) String() string {
	result := "linearizable"
	switch {
	case len(h.Illegal) > 0:
		result = fmt.Sprintf("NOT-LINEARIZABLE(%s)", strings.Join(h.Illegal, ","))
	case len(h.TimedOut) > 0:
		result = fmt.Sprintf("UNDECIDED(%s)", strings.Join(h.TimedOut, ","))
	}
	return fmt.Sprintf("ops=%d acked-incs=%d unknown-incs=%d reads=%d cells=%d result=%s", h.Ops, h.Acked, h.Unknown, h.Reads, h.Cells, result)
}

// checkCounterHistory checks each counter's calls for linearizability
// with porcupine, each counter within timeout. When a counter's history is
// not linearizable (or cannot be decided in time), the calls of those
// counters are drawn by porcupine's visualization into dir/history.html,
// and the whole history is saved as dir/history.json.
func checkCounterHistory(t testing.TB, calls []counterCall, timeout time.Duration, dir string) historyCheck {
	t.Helper()
	var h historyCheck
	byCell := map[string][]porcupine.Operation{}
	for _, c := range calls {
		switch {
		case !c.Inc:
			h.Reads++
		case c.unknown():
			h.Unknown++
		default:
			h.Acked++
		}
		byCell[c.Cell] = append(byCell[c.Cell], c.operation())
	}
	h.Ops, h.Cells = len(calls), len(byCell)
	var bad []porcupine.Operation
	for _, cell := range slices.Sorted(maps.Keys(byCell)) {
		switch porcupine.CheckOperationsTimeout(counterModel, byCell[cell], timeout) {
		case porcupine.Illegal:
			h.Illegal = append(h.Illegal, cell)
		case porcupine.Unknown:
			h.TimedOut = append(h.TimedOut, cell)
		default:
			continue
		}
		bad = append(bad, byCell[cell]...)
	}
	if len(bad) == 0 {
		return h
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := json.Marshal(calls); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "history.json"), b, 0o644)
	}
	_, info := porcupine.CheckOperationsVerbose(counterModel, bad, timeout)
	h.Visualization = filepath.Join(dir, "history.html")
	if err := porcupine.VisualizePath(counterModel, info, h.Visualization); err != nil {
		t.Errorf("porcupine visualization: %v", err)
		h.Visualization = ""
	}
	return h
}

// TestCounterModel checks the checker on small histories, each legal one
// beside an illegal twin: a lost acknowledged increment, a value
// acknowledged twice, a stale read, an unknown increment that may or may
// not have happened.
func TestCounterModel(t *testing.T) {
	inc := func(client int, call, ret, v int64) counterCall {
		return counterCall{Client: client, Cell: "c", Inc: true, Call: call, Return: ret, Value: v, Outcome: "ok"}
	}
	read := func(client int, call, ret, v int64) counterCall {
		return counterCall{Client: client, Cell: "c", Call: call, Return: ret, Value: v, Outcome: "ok"}
	}
	unknown := func(client int, call int64) counterCall {
		return counterCall{Client: client, Cell: "c", Inc: true, Call: call, Return: unknownReturn, Outcome: "unknown: test"}
	}
	cases := []struct {
		name  string
		calls []counterCall
		legal bool
	}{
		{"sequential", []counterCall{inc(0, 0, 1, 1), inc(1, 2, 3, 2), read(0, 4, 5, 2)}, true},
		{"lost acknowledged increment", []counterCall{inc(0, 0, 1, 1), inc(1, 2, 3, 2), read(0, 4, 5, 1)}, false},
		{"concurrent increments in either order", []counterCall{inc(0, 0, 10, 2), inc(1, 1, 9, 1)}, true},
		{"value acknowledged twice", []counterCall{inc(0, 0, 1, 1), inc(1, 2, 3, 1)}, false},
		{"read concurrent with an increment", []counterCall{inc(0, 0, 10, 1), read(1, 1, 2, 0), read(2, 3, 4, 1)}, true},
		{"stale read after a newer one", []counterCall{inc(0, 0, 10, 1), read(1, 1, 2, 1), read(2, 3, 4, 0)}, false},
		{"unknown increment applied", []counterCall{unknown(0, 0), inc(1, 5, 6, 2)}, true},
		{"unknown increment not applied", []counterCall{unknown(0, 0), inc(1, 5, 6, 1), read(1, 7, 8, 1)}, true},
		{"unknown increment cannot explain two", []counterCall{unknown(0, 0), inc(1, 5, 6, 3)}, false},
		{"unknown increment cannot apply before it was sent", []counterCall{read(1, 0, 1, 1), unknown(0, 2)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := checkCounterHistory(t, c.calls, 10*time.Second, t.TempDir())
			if h.ok() != c.legal {
				t.Fatalf("checker says %v, want linearizable=%v", h, c.legal)
			}
			if !c.legal && (h.Visualization == "" || !fileHas(t, h.Visualization, "<html")) {
				t.Fatalf("no visualization for an illegal history: %q", h.Visualization)
			}
		})
	}
}

func fileHas(t testing.TB, path, s string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(strings.ToLower(string(b)), s)
}

// TestCheckSavedHistory checks a history.json that a chaos run kept
// (CELLB_CHAOS_HISTORY=path), e.g. after changing the model; skipped
// without it.
func TestCheckSavedHistory(t *testing.T) {
	path := os.Getenv("CELLB_CHAOS_HISTORY")
	if path == "" {
		t.Skip("CELLB_CHAOS_HISTORY is not set")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var calls []counterCall
	if err := json.Unmarshal(b, &calls); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	h := checkCounterHistory(t, calls, time.Minute, t.TempDir())
	t.Logf("%v in %v", h, time.Since(began))
	if !h.ok() {
		t.Fatalf("not linearizable: %v", h)
	}
}
