package modernc

import "testing"

func TestStmtCacheEvictsTheLeastRecentlyReturned(t *testing.T) {
	c := newStmtCache(2)
	k := func(s string) stmtKey { return stmtKey{sql: s} }
	if f := c.put(k("a"), 1); f != 0 {
		t.Fatalf("put a finalized %d", f)
	}
	c.put(k("b"), 2)
	if st := c.take(k("a")); st != 1 {
		t.Fatalf("take a = %d", st)
	}
	c.put(k("a"), 1) // a is now more recent than b
	if f := c.put(k("c"), 3); f != 2 {
		t.Fatalf("the full cache gave %d to finalize, want b's 2", f)
	}
	if f := c.put(k("a"), 9); f != 9 {
		t.Fatalf("a second idle statement for a was kept (gave %d)", f)
	}
	if st := c.take(stmtKey{sql: "a", internal: true}); st != 0 {
		t.Fatal("the driver's own statements share entries with the caller's")
	}
	if got := len(c.drain()); got != 2 || c.take(k("a")) != 0 {
		t.Fatalf("drain returned %d statements and left some", got)
	}
	off := newStmtCache(0)
	if f := off.put(k("a"), 5); f != 5 {
		t.Fatal("a disabled cache kept a statement")
	}
}
