package cell

import (
	"errors"
	"strings"
	"testing"
)

func TestMayAddColumns(t *testing.T) {
	for q, want := range map[string]bool{
		"CREATE TABLE t(x)": true, "create  temp table t(x)": true, "CREATE VIRTUAL TABLE f USING fts5(x)": true,
		"alter table t add column y": true, "INSERT INTO t(created_at) VALUES(1)": false,
		"SELECT * FROM tables": false, "CREATE INDEX i ON t(x)": false, "CREATE TABLE IF NOT EXISTS t(x)": true,
	} {
		if got := mayAddColumns(q); got != want {
			t.Errorf("mayAddColumns(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestLimitsDefaultsAndOff(t *testing.T) {
	rt := &Runtime{opts: Options{Limits: Limits{MaxColumns: -1, MaxValueBytes: 10}}}
	l := rt.limits()
	if l.MaxStatementBytes != DefaultMaxStatementBytes || l.MaxBoundParameters != DefaultMaxBoundParameters || l.MaxDatabaseBytes != DefaultMaxDatabaseBytes {
		t.Fatalf("zero fields did not take the defaults: %+v", l)
	}
	if l.MaxColumns != -1 || l.MaxValueBytes != 10 {
		t.Fatalf("set fields changed: %+v", l)
	}
	var le *LimitError
	if err := l.checkStatement("SELECT ?, ?", []any{"12345", "678901"}); !errors.As(err, &le) || le.Limit != LimitRowSize || le.Got != 11 {
		t.Fatalf("two arguments of 11 bytes under a 10-byte limit: %v", err)
	}
	if err := l.checkStatement("SELECT ?", []any{int64(1)}); err != nil {
		t.Fatalf("a small statement: %v", err)
	}
	off := (&Runtime{opts: Options{Limits: Limits{MaxValueBytes: -1, MaxStatementBytes: -1, MaxBoundParameters: -1}}}).limits()
	if err := off.checkStatement(strings.Repeat("x", DefaultMaxStatementBytes+1), make([]any, 200)); err != nil {
		t.Fatalf("limits off: %v", err)
	}
}

func TestRowCountErrorMatches(t *testing.T) {
	none, several := &RowCountError{Query: "q"}, &RowCountError{Query: "q", Several: true}
	if !errors.Is(none, ErrNoRows) || errors.Is(none, ErrMultipleRows) {
		t.Fatal("no rows: wrong sentinel")
	}
	if !errors.Is(several, ErrMultipleRows) || errors.Is(several, ErrNoRows) {
		t.Fatal("several rows: wrong sentinel")
	}
}
