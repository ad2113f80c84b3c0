package celltest

import (
	"context"
	"errors"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store/memstore"
)

// Point-in-time bookmarks (issue 23): State.CurrentBookmark and
// State.BookmarkForTime on the LTX log.
func bookmarkCases() []caseDef {
	return []caseDef{
		{"storage/bookmarks", caseBookmarks},
	}
}

// A bookmark names the state after the cell's latest commit, bookmarks
// sort as strings in commit order across epochs, a cell restored
// elsewhere that has not written yet is named by the state it restored,
// and BookmarkForTime answers the newest state committed at or before a
// time, in an older epoch when the time is before the newest one began.
// A log without point-in-time history refuses both.
func caseBookmarks(c *checkT) {
	bucket := memstore.New()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	open := func() durability.Log {
		l, err := ltxlog.New(ltxlog.Options{Store: bucket, Clock: clk, Logger: quietLogger(), CompactAfter: -1,
			UploadRetries: -1, RetryDelay: time.Millisecond})
		if err != nil {
			c.fatalf("open the LTX log: %v", err)
		}
		return l
	}
	ls := bucketWinsLease()
	rt := c.runtime(rtConfig{log: open(), lease: ls, clock: clk})
	s := c.probeClass(rt, "Bookmarks", nil).stub("a")

	// write increments n and takes the bookmark in the same handler: the
	// write is included (CurrentBookmark waits for it to be durable).
	write := func(what string) (int64, string) {
		type out struct {
			v int64
			b string
		}
		o := must(c, s, what, func(ctx context.Context, p *probe) (out, error) {
			v, err := p.incr(ctx, "n")
			if err != nil {
				return out{}, err
			}
			b, err := p.st.CurrentBookmark(ctx)
			return out{v, b}, err
		})
		if _, err := durability.ParseBookmark(o.b); err != nil {
			c.errorf("%s: CurrentBookmark returned %v", what, err)
		}
		return o.v, o.b
	}
	forTime := func(t time.Time) (string, error) {
		type out struct {
			b   string
			err error
		}
		o := must(c, s, "BookmarkForTime", func(ctx context.Context, p *probe) (out, error) {
			b, err := p.st.BookmarkForTime(ctx, t)
			return out{b, err}, nil
		})
		return o.b, o.err
	}

	_, b1 := write("the first write")
	clk.Advance(time.Minute)
	_, b2 := write("the second write")
	if !(b1 < b2) {
		c.errorf("a later commit's bookmark %q does not sort after the earlier %q", b2, b1)
	}
	pb1, _ := durability.ParseBookmark(b1)
	pb2, _ := durability.ParseBookmark(b2)
	if pb1.Epoch != pb2.Epoch || pb2.TXID != pb1.TXID+1 {
		c.errorf("two commits of one epoch have bookmarks %+v and %+v, want the next TXID", pb1, pb2)
	}
	again := must(c, s, "a bookmark without a write", func(ctx context.Context, p *probe) (string, error) {
		return p.st.CurrentBookmark(ctx)
	})
	if again != b2 {
		c.errorf("with no commit since, CurrentBookmark = %q, want the last commit's %q", again, b2)
	}

	checkTime := func(t time.Time, want string) {
		got, err := forTime(t)
		if err != nil || got != want {
			c.errorf("BookmarkForTime(%s) = %q, %v; want %q", t.Format(time.RFC3339), got, err, want)
		}
	}
	checkTime(start.Add(30*time.Second), b1)
	checkTime(start.Add(time.Minute), b2) // at t itself
	checkTime(start.Add(time.Hour), b2)
	_, err := forTime(start.Add(-time.Second))
	var tooOld *durability.BookmarkTooOldError
	if !errors.As(err, &tooOld) || !tooOld.Oldest.Equal(start) {
		c.errorf("BookmarkForTime before the first commit: %v, want a *durability.BookmarkTooOldError naming %s", err, start)
	}

	// Another node restores the cell under a new epoch.
	c.closeRuntime(rt)
	clk.Advance(time.Minute) // start+2m
	rt = c.runtime(rtConfig{log: open(), lease: ls, clock: clk})
	s = c.probeClass(rt, "Bookmarks", nil).stub("a")
	restored := must(c, s, "a bookmark before the new node writes", func(ctx context.Context, p *probe) (string, error) {
		return p.st.CurrentBookmark(ctx)
	})
	if restored != b2 {
		c.errorf("a restored cell that wrote nothing has bookmark %q, want the state it restored, %q", restored, b2)
	}
	clk.Advance(time.Minute) // start+3m
	v3, b3 := write("the first write of the new epoch")
	if v3 != 3 {
		c.errorf("after the restore n = %d, want 3", v3)
	}
	pb3, _ := durability.ParseBookmark(b3)
	if !(b2 < b3) || pb3.Epoch <= pb2.Epoch {
		c.errorf("the new epoch's bookmark %q does not sort after the old epoch's %q", b3, b2)
	}
	checkTime(start.Add(90*time.Second), b2) // before the new epoch began: the old epoch
	checkTime(start.Add(time.Hour), b3)

	// A log without point-in-time history.
	rtLocal := c.runtime(rtConfig{})
	sl := c.probeClass(rtLocal, "Bookmarks", nil).stub("a")
	must(c, sl, "bookmarks on the local log", func(ctx context.Context, p *probe) (int, error) {
		var nb *durability.NoBookmarksError
		if _, err := p.st.CurrentBookmark(ctx); !errors.As(err, &nb) {
			c.errorf("CurrentBookmark on the local log: %v, want a *durability.NoBookmarksError", err)
		}
		if _, err := p.st.BookmarkForTime(ctx, start); !errors.As(err, &nb) {
			c.errorf("BookmarkForTime on the local log: %v, want a *durability.NoBookmarksError", err)
		}
		return 0, nil
	})
}
