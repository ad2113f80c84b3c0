package modernc

// stmtCache keeps idle prepared statements by their SQL text, so the
// statements a cell runs over and over (BEGIN, COMMIT, its inserts) are
// parsed once. A statement is taken out while in use and put back when
// done, so two uses of the same SQL at once (nested Rows) never share one.
// It allocates nothing once warm: a statement runs take and put on every
// call.
type stmtCache struct {
	max   int
	clock uint64 // counts puts; an entry's stamp says when it was last returned
	byKey map[stmtKey]cachedStmt
}

// stmtKey separates the driver's own statements, which the authorizer
// does not see, from the caller's: a caller's SQL must never reuse a
// statement that was never authorized.
type stmtKey struct {
	sql      string
	internal bool
}

type cachedStmt struct {
	stmt  uintptr
	stamp uint64
}

func newStmtCache(max int) stmtCache {
	return stmtCache{max: max, byKey: make(map[stmtKey]cachedStmt)}
}

// take removes and returns the idle statement for key, or 0.
func (c *stmtCache) take(key stmtKey) uintptr {
	e, ok := c.byKey[key]
	if !ok {
		return 0
	}
	delete(c.byKey, key)
	return e.stmt
}

// put stores an idle, reset statement. It returns a statement the caller
// must finalize, or 0: the least recently returned one when the cache is
// full, or stmt itself if key already has an idle statement or caching is
// off.
func (c *stmtCache) put(key stmtKey, stmt uintptr) (finalize uintptr) {
	if c.max <= 0 {
		return stmt
	}
	if _, ok := c.byKey[key]; ok {
		return stmt
	}
	c.clock++
	c.byKey[key] = cachedStmt{stmt: stmt, stamp: c.clock}
	if len(c.byKey) <= c.max {
		return 0
	}
	// Evicting scans the few entries; it happens only when a connection
	// runs more distinct statements than the cache holds.
	var oldest stmtKey
	min := ^uint64(0)
	for k, e := range c.byKey {
		if e.stamp < min {
			oldest, min = k, e.stamp
		}
	}
	finalize = c.byKey[oldest].stmt
	delete(c.byKey, oldest)
	return finalize
}

// drain empties the cache and returns every statement for finalizing.
func (c *stmtCache) drain() []uintptr {
	out := make([]uintptr, 0, len(c.byKey))
	for _, e := range c.byKey {
		out = append(out, e.stmt)
	}
	clear(c.byKey)
	return out
}
