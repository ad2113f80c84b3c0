package driver

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSQLiteErrorMatchesNotAuthorizedOnlyForAuth(t *testing.T) {
	denied := fmt.Errorf("exec: %w", &SQLiteError{Code: CodeAuth, ExtendedCode: CodeAuth, Msg: "not authorized"})
	if !errors.Is(denied, ErrNotAuthorized) {
		t.Fatal("an SQLITE_AUTH error does not match ErrNotAuthorized")
	}
	unique := &SQLiteError{Code: CodeConstraint, ExtendedCode: 2067, Msg: "UNIQUE constraint failed: t.x"}
	if errors.Is(unique, ErrNotAuthorized) {
		t.Fatal("a constraint error matches ErrNotAuthorized")
	}
	var se *SQLiteError
	if !errors.As(fmt.Errorf("wrapped: %w", unique), &se) || se.ExtendedCode != 2067 {
		t.Fatal("errors.As does not find the SQLiteError")
	}
	if s := unique.Error(); !strings.Contains(s, "UNIQUE constraint failed: t.x") || !strings.Contains(s, "2067") {
		t.Fatalf("Error() = %q: want SQLite's message and the extended code", s)
	}
	if s := (&SQLiteError{Code: CodeBusy}).Error(); !strings.Contains(s, "5") {
		t.Fatalf("Error() without message or extended code = %q", s)
	}
}
