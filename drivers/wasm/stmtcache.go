package wasm

import (
	"strings"

	"github.com/ncruces/go-sqlite3"
)

// stmtCacheSize bounds the prepared statements kept per connection. A cell
// runs the same few statements again and again; preparing costs more than
// running a small INSERT.
const stmtCacheSize = 64

// stmtCache keeps prepared single-statement SQL for reuse, least recently
// used first out. Statements were authorized when prepared, so the cache is
// emptied whenever the authorizer changes (SQLite itself re-prepares, and
// re-authorizes, statements that a schema change made stale).
type stmtCache struct {
	byText map[string]*cachedStmt
	order  []*cachedStmt // least recently used first
}

type cachedStmt struct {
	sql   string
	stmt  *sqlite3.Stmt
	inUse bool // held by open Rows
}

// get returns the cached statement for sql, if any and not in use.
func (sc *stmtCache) get(sql string) *cachedStmt {
	cs := sc.byText[sql]
	if cs == nil || cs.inUse {
		return nil
	}
	sc.touch(cs)
	return cs
}

func (sc *stmtCache) touch(cs *cachedStmt) {
	// The statement just used is usually the most recent already.
	for i := len(sc.order) - 1; i >= 0; i-- {
		if x := sc.order[i]; x == cs {
			copy(sc.order[i:], sc.order[i+1:])
			sc.order[len(sc.order)-1] = cs
			return
		}
	}
}

// put caches a statement prepared from sql, which must hold exactly that
// one statement. It evicts the least recently used statement not in use.
func (sc *stmtCache) put(sql string, s *sqlite3.Stmt) *cachedStmt {
	if sc.byText == nil {
		sc.byText = map[string]*cachedStmt{}
	}
	if old := sc.byText[sql]; old != nil {
		// The cached one is in use; keep it, and let this one go uncached.
		return nil
	}
	if len(sc.order) >= stmtCacheSize {
		for i, x := range sc.order {
			if !x.inUse {
				x.stmt.Close()
				delete(sc.byText, x.sql)
				sc.order = append(sc.order[:i], sc.order[i+1:]...)
				break
			}
		}
		if len(sc.order) >= stmtCacheSize {
			return nil
		}
	}
	cs := &cachedStmt{sql: sql, stmt: s}
	sc.byText[sql] = cs
	sc.order = append(sc.order, cs)
	return cs
}

// clear finalizes every cached statement not in use and forgets all of
// them; statements held by open Rows are finalized when those close.
func (sc *stmtCache) clear() {
	for _, cs := range sc.order {
		if !cs.inUse {
			cs.stmt.Close()
		}
	}
	sc.byText = nil
	sc.order = nil
}

// cacheable reports whether a statement with this tail can be cached: the
// SQL must be one statement (trailing blanks and a semicolon are fine).
func cacheable(tail string) bool {
	return strings.TrimSpace(strings.TrimLeft(tail, "; \t\r\n")) == ""
}
