package admin

import (
	"fmt"
	"strings"

	"github.com/cellb/cellb/core/store"
)

// ErrListStuck: a listing returned the same continuation token twice.
var ErrListStuck = store.ErrListStuck

// NoCellError: the bucket holds neither an ownership record nor a log for
// the cell (a mistyped key, or a name resolved with the wrong script or
// class).
type NoCellError struct {
	Cell string
}

func (e *NoCellError) Error() string {
	if _, id, ok := strings.Cut(e.Cell, ":"); ok && !isID(id) {
		return fmt.Sprintf("the bucket holds nothing for %s (no ownership record, no log), and %q is not an id (64 hex digits): if it is the cell's name, add --name (and --script-name when it is not the default)", e.Cell, id)
	}
	return fmt.Sprintf("the bucket holds nothing for %s (no ownership record, no log); check the cell key, or the class and script name it was resolved with", e.Cell)
}

// HeldError: a live node holds the cell, so it is not repaired (the node
// owns the record; a repair would take the cell from under it).
type HeldError struct {
	Cell      string
	Node      string
	ExpiresMs uint64
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is held by live node %s (lease expires at %d ms); nothing is repaired while a live node holds the cell: stop the node, or wait for its lease to expire", e.Cell, e.Node, e.ExpiresMs)
}

// UnrepairableError: the cell has problems the one allowed repair (the
// released ownership record at the newest epoch) does not fix. Findings
// say which and what to do.
type UnrepairableError struct {
	Cell     string
	Findings []Finding
}

func (e *UnrepairableError) Error() string {
	var parts []string
	for _, f := range e.Findings {
		parts = append(parts, f.Kind+": "+f.Message)
	}
	return fmt.Sprintf("%s cannot be repaired by rewriting its ownership record: %s", e.Cell, strings.Join(parts, "; "))
}

// Unwrap returns the findings' underlying errors (a *layout.RecordError,
// an *ltx.MissingSnapshotError, an *ltx.GapError, …).
func (e *UnrepairableError) Unwrap() []error {
	var errs []error
	for _, f := range e.Findings {
		if f.Err != nil {
			errs = append(errs, f.Err)
		}
	}
	return errs
}

// ConflictError: the ownership record changed (or appeared) between the
// diagnosis and the write; nothing was written. Run the repair again.
type ConflictError struct {
	Key string
	Err error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s changed since it was read; nothing was written (diagnose again): %v", e.Key, e.Err)
}

func (e *ConflictError) Unwrap() error { return e.Err }

// ProblemsError: a report was made, but some of its records did not decode
// or could not be read (each named on its node or cell, and in Errs).
type ProblemsError struct {
	Errs []error
}

func (e *ProblemsError) Error() string {
	return fmt.Sprintf("%d records could not be read (shown with the rest); the first: %v", len(e.Errs), e.Errs[0])
}

func (e *ProblemsError) Unwrap() []error { return e.Errs }

// FindingsError: a report was made and it shows findings (something wrong
// with a cell, each named on its cell). Show returns it so that a command
// exits non-zero whenever it prints a finding, for one cell as for the
// whole bucket.
type FindingsError struct {
	// Findings counts the findings, Cells the cells they are on; First is
	// the first cell with one and Kind that finding's kind.
	Findings, Cells int
	First, Kind     string
}

func (e *FindingsError) Error() string {
	return fmt.Sprintf("%d findings on %d cells (shown with the rest); the first: %s %s", e.Findings, e.Cells, e.First, e.Kind)
}

// findingsOf is the FindingsError of cells, nil when none has a finding.
func findingsOf(cells ...*Cell) error {
	var e FindingsError
	for _, c := range cells {
		if len(c.Findings) == 0 {
			continue
		}
		if e.Cells == 0 {
			e.First, e.Kind = c.Key, c.Findings[0].Kind
		}
		e.Cells++
		e.Findings += len(c.Findings)
	}
	if e.Cells == 0 {
		return nil
	}
	return &e
}
