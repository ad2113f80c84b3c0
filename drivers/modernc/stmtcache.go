package modernc

import "container/list"

// stmtCache keeps idle prepared statements by their SQL text, so the
// statements a cell runs over and over (BEGIN, COMMIT, its inserts) are
// parsed once. A statement is taken out while in use and put back when
// done, so two uses of the same SQL at once (nested Rows) never share one.
type stmtCache struct {
	max   int
	byKey map[stmtKey]*list.Element
	lru   list.List // front is the most recently returned
}

// stmtKey separates the driver's own statements, which the authorizer
// does not see, from the caller's: a caller's SQL must never reuse a
// statement that was never authorized.
type stmtKey struct {
	sql      string
	internal bool
}

type cachedStmt struct {
	key  stmtKey
	stmt uintptr
}

func newStmtCache(max int) stmtCache {
	return stmtCache{max: max, byKey: make(map[stmtKey]*list.Element)}
}

// take removes and returns the idle statement for key, or 0.
func (c *stmtCache) take(key stmtKey) uintptr {
	e, ok := c.byKey[key]
	if !ok {
		return 0
	}
	delete(c.byKey, key)
	c.lru.Remove(e)
	return e.Value.(*cachedStmt).stmt
}

// put stores an idle, reset statement. It returns the statements the caller
// must finalize: an evicted one, or stmt itself if key already has an idle
// statement or caching is off.
func (c *stmtCache) put(key stmtKey, stmt uintptr) (finalize []uintptr) {
	if c.max <= 0 {
		return []uintptr{stmt}
	}
	if _, ok := c.byKey[key]; ok {
		return []uintptr{stmt}
	}
	c.byKey[key] = c.lru.PushFront(&cachedStmt{key: key, stmt: stmt})
	for c.lru.Len() > c.max {
		e := c.lru.Back()
		cs := e.Value.(*cachedStmt)
		c.lru.Remove(e)
		delete(c.byKey, cs.key)
		finalize = append(finalize, cs.stmt)
	}
	return finalize
}

// drain empties the cache and returns every statement for finalizing.
func (c *stmtCache) drain() []uintptr {
	var out []uintptr
	for e := c.lru.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*cachedStmt).stmt)
	}
	c.lru.Init()
	clear(c.byKey)
	return out
}
