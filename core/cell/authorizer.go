package cell

import (
	"errors"
	"strings"
	"sync/atomic"

	"github.com/cellb/cellb/core/driver"
)

// stmtGuard is the authorizer's view of the statement running on the
// cell's connection: whether user code runs it (the runtime's own
// statements pass), the SQL text, what the runtime's rules refused, and,
// on a cell's in-memory database, whether the statement would store
// something. It exists so the driver's callback reads nothing else of the
// instance. The instance's mu guards it: the driver calls authorize
// inside a call made under it.
type stmtGuard struct {
	userCode atomic.Bool
	query    string       // the user statement text the authorizer is asked about
	denial   *DeniedError // the first refusal of the statement running
	probing  bool         // user SQL on the in-memory database: refuse writes
	probeHit bool         // ... and one was refused: create the file
	denied   bool         // the runtime's rules refused the statement
}

// authorize is the cell connection's SQLite authorizer. The runtime's own
// statements pass; user statements go through userPolicy.
func (g *stmtGuard) authorize(action driver.Action, arg1, arg2, database, trigger string) driver.AuthResult {
	if !g.userCode.Load() {
		return driver.AuthOK
	}
	d := userPolicy(action, arg1, arg2)
	if d == nil && action == driver.ActionAlterTable {
		// SQLite does not tell the authorizer a table's new name (ALTER
		// TABLE reports the database and the old name only), so the
		// statement text decides.
		d = renamePolicy(g.query)
	}
	if d != nil {
		if g.denial == nil {
			g.denial = d
		}
		g.denied = true
		return driver.AuthDeny
	}
	if g.probing && writesState(action, arg1, arg2) {
		// A cell on its in-memory database: the statement would store
		// something, so it runs again on the file (see probe).
		g.probeHit = true
		return driver.AuthDeny
	}
	return driver.AuthOK
}

// asUser runs a driver call on behalf of user code, for the SQL text
// query: the authorizer applies, and a refusal comes back as a
// *DeniedError naming what was refused.
func (g *stmtGuard) asUser(query string, fn func() error) error {
	g.denial = nil
	g.query = query
	g.userCode.Store(true)
	err := fn()
	g.userCode.Store(false)
	g.query = ""
	return g.userError(err)
}

// probe runs fn as asUser does on a cell's in-memory database, which must
// not take a write: a statement that would store something is refused,
// and writes reports it so the caller can run it again on the file. A
// statement the runtime's rules refused reports no write: it fails as it
// is.
func (g *stmtGuard) probe(query string, fn func() error) (writes bool, err error) {
	g.probing, g.probeHit, g.denied = true, false, false
	err = g.asUser(query, fn)
	hit, denied := g.probeHit, g.denied
	g.probing, g.probeHit, g.denied = false, false, false
	return hit && !denied, err
}

func (g *stmtGuard) userError(err error) error {
	if err == nil {
		return nil
	}
	if d := g.denial; d != nil {
		g.denial = nil
		out := *d
		out.Err = err
		return &out
	}
	if errors.Is(err, driver.ErrNotAuthorized) {
		// The driver refused the statement on its own (it guards settings
		// it manages) before asking the runtime's authorizer.
		return &DeniedError{Action: "statement", Why: "refused by the driver: " + err.Error(), Err: err}
	}
	return err
}

// reservedTable reports names user SQL may not touch: celld's tables and
// the replicator's control tables, and SQLite's raw page table.
func reservedTable(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "_cf_") || strings.HasPrefix(n, "_litestream_") || n == "sqlite_dbpage"
}

// Pragmas user code may run with or without an argument: they change only
// how queries behave, not durability, locking or the file format.
var settablePragmas = map[string]bool{
	"foreign_keys": true, "defer_foreign_keys": true, "case_sensitive_like": true,
	"recursive_triggers": true, "reverse_unordered_selects": true, "optimize": true,
	"analysis_limit": true, "cache_size": true, "user_version": true,
	"automatic_index": true,
}

// Pragmas user code may read (no argument, or a table or schema name as
// the argument): they report and change nothing.
var readPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true,
	"index_info": true, "index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true,
	"integrity_check": true, "quick_check": true, "collation_list": true, "function_list": true,
	"pragma_list": true, "module_list": true, "compile_options": true, "database_list": true,
	"page_size": true, "page_count": true, "freelist_count": true, "schema_version": true,
	"data_version": true, "encoding": true, "application_id": true, "auto_vacuum": true,
	"journal_mode": true, "synchronous": true, "locking_mode": true, "max_page_count": true,
	"wal_autocheckpoint": true, "busy_timeout": true,
}

// Pragmas whose argument is an object name rather than a setting.
var namePragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "index_list": true, "index_info": true,
	"index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true,
	"integrity_check": true, "quick_check": true, "table_list": true,
}

// userPolicy decides one authorizer request for user SQL; nil allows it.
func userPolicy(action driver.Action, arg1, arg2 string) *DeniedError {
	deny := func(detail, why string) *DeniedError {
		return &DeniedError{Action: action.String(), Detail: detail, Why: why}
	}
	switch action {
	case driver.ActionTransaction:
		return deny(strings.ToUpper(arg1), "the runtime owns transactions: use SQL.Transaction for a nested one")
	case driver.ActionSavepoint:
		return deny(strings.ToUpper(arg1)+" "+arg2, "the runtime owns transactions: use SQL.Transaction for a nested one")
	case driver.ActionAttach, driver.ActionDetach:
		return deny(arg1, "a cell uses only its own database")
	case driver.ActionFunction:
		if strings.EqualFold(arg2, "load_extension") {
			return deny(arg2, "loading extensions is not allowed")
		}
		return nil
	case driver.ActionPragma:
		name := strings.ToLower(arg1)
		if namePragmas[name] && arg2 != "" {
			if reservedTable(arg2) {
				return deny(name+"("+arg2+")", "celld's and the replicator's tables are reserved to the runtime")
			}
			return nil
		}
		if settablePragmas[name] {
			return nil
		}
		if readPragmas[name] && arg2 == "" {
			return nil
		}
		if arg2 != "" {
			return deny(name+"="+arg2, "pragmas that change durability, locking or the schema's safety are reserved to the runtime")
		}
		return deny(name, "this pragma is not available to cells")
	}
	for _, name := range []string{arg1, arg2} {
		if name != "" && reservedTable(name) {
			return deny(name, "celld's and the replicator's tables are reserved to the runtime")
		}
	}
	return nil
}

// renamePolicy denies an ALTER TABLE whose text renames a table to a
// reserved name (ALTER TABLE t RENAME TO _cf_KV); nil allows it.
func renamePolicy(query string) *DeniedError {
	for _, name := range renameTargets(query) {
		if reservedTable(name) {
			return &DeniedError{Action: driver.ActionAlterTable.String(), Detail: "RENAME TO " + name,
				Why: "celld's and the replicator's tables are reserved to the runtime"}
		}
	}
	return nil
}

// renameTargets returns the new names of every "RENAME TO name" in query,
// tokenized as SQLite does: comments, string literals and quoted
// identifiers are single tokens, so the words inside them never match.
// (RENAME [COLUMN] a TO b renames a column: RENAME is not followed by TO.)
func renameTargets(query string) []string {
	var out []string
	toks := sqlTokens(query)
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].word("RENAME") && toks[i+1].word("TO") && toks[i+2].name != "" {
			out = append(out, toks[i+2].name)
		}
	}
	return out
}

// sqlToken is one token of SQL text: a bare word, or a quoted identifier
// or string literal (unquoted); name is "" for any other token.
type sqlToken struct {
	name string
	bare bool
}

func (t sqlToken) word(w string) bool { return t.bare && strings.EqualFold(t.name, w) }

func sqlTokens(q string) []sqlToken {
	var toks []sqlToken
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += 2 + end + 2
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			var b strings.Builder
			j := i + 1
			for ; j < len(q); j++ {
				if q[j] == closer {
					if closer != ']' && j+1 < len(q) && q[j+1] == closer {
						b.WriteByte(closer) // a doubled quote stands for one
						j++
						continue
					}
					break
				}
				b.WriteByte(q[j])
			}
			toks = append(toks, sqlToken{name: b.String()})
			i = j + 1
		case isIdentByte(c):
			j := i
			for j < len(q) && isIdentByte(q[j]) {
				j++
			}
			toks = append(toks, sqlToken{name: q[i:j], bare: true})
			i = j
		default:
			toks = append(toks, sqlToken{})
			i++
		}
	}
	return toks
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
