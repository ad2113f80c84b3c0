// Package counter is CellB's first example app: one counter cell per name,
// served over HTTP.
//
//	POST /counter/<name>             increment; 200 {"value":N} once durable
//	GET  /counter/<name>             200 {"value":N}
//	POST /counter/<name>/alarm?in=MS set the alarm; when it fires, +1000
//	DELETE /counter/<name>           delete everything the cell stores (its
//	                                 value and its alarm); 200 {"value":0}
//	GET  /counter/<name>/bookmark    200 {"bookmark":B}: the state after the
//	                                 cell's latest commit (State.CurrentBookmark)
//	GET  /counter/<name>/bookmark?at=MS
//	                                 200 {"bookmark":B}: the newest state
//	                                 committed at or before Unix ms MS
//	                                 (State.BookmarkForTime); 404 before the
//	                                 history kept
//	POST /counter/<name>/restore?bookmark=B
//	                                 200 {"undo":U}: the cell's storage is
//	                                 restored to B and the object restarted
//	                                 (State.RestoreBookmarkOnNextSession, then
//	                                 State.Abort), so the next call reads
//	                                 B's value; U names the state before, and
//	                                 restoring it undoes the restore. The
//	                                 alarm is not restored (it is cleared).
//	                                 400 for a bad B or one after the current
//	                                 state, 404 for one no longer kept
//
// Bookmarks need the LTX log (cellb serve's default): on another log the
// bookmark routes answer 501, as the restore route does under a lease
// without epochs (lease.None).
//
// Errors are answered as core/httperr maps them (400 for bad input, 409 for
// a cell owned elsewhere, 503 for a reset object or a refused write, ...),
// with the error's message as the body. Every answer from a cell carries
// X-Cellb-Node and X-Cellb-Epoch, naming the writer that produced it.
//
// Tools outside this project drive this contract (cellb serve serves it):
// keep it exactly.
package counter

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/httperr"
)

// Class is the class name the counter registers; it keys the cells.
const Class = "Counter"

// MaxNameLen keeps names (and the URLs that carry them) reasonable.
const MaxNameLen = 256

// Counter is the counter cell.
type Counter struct {
	st *cell.State
}

const valueKey = "value"

// New is the class's constructor.
func New(ctx context.Context, st *cell.State) (*Counter, error) {
	return &Counter{st: st}, nil
}

// Value is the counter's value.
func (c *Counter) Value(ctx context.Context) (int64, error) {
	var v int64
	_, err := c.st.KV().GetInto(ctx, valueKey, &v)
	return v, err
}

// Add adds n and returns the new value.
func (c *Counter) Add(ctx context.Context, n int64) (int64, error) {
	v, err := c.Value(ctx)
	if err != nil {
		return 0, err
	}
	v += n
	return v, c.st.KV().Put(ctx, valueKey, v)
}

// DeleteAll deletes everything the cell stores: the value and the alarm
// (State.DeleteAll).
func (c *Counter) DeleteAll(ctx context.Context) error { return c.st.DeleteAll(ctx) }

// SetAlarm sets the cell's alarm.
func (c *Counter) SetAlarm(ctx context.Context, at time.Time) error {
	return c.st.SetAlarm(ctx, at)
}

// Bookmark names the cell's state after its latest commit; with at
// non-zero, its newest state committed at or before at.
func (c *Counter) Bookmark(ctx context.Context, at time.Time) (string, error) {
	if at.IsZero() {
		return c.st.CurrentBookmark(ctx)
	}
	return c.st.BookmarkForTime(ctx, at)
}

// RestoreOnNextSession asks that the cell's storage be restored to
// bookmark b when the object next starts; it returns the undo bookmark.
func (c *Counter) RestoreOnNextSession(ctx context.Context, b string) (string, error) {
	return c.st.RestoreBookmarkOnNextSession(ctx, b)
}

// Restart resets the object (State.Abort); the next call starts it
// afresh. Called with a handler's context it ends that handler.
func (c *Counter) Restart(ctx context.Context, reason string) { c.st.Abort(ctx, reason) }

// Epoch is the epoch of the writer this call runs under.
func (c *Counter) Epoch() uint64 { return c.st.Epoch() }

// Alarm adds 1000; its write and the alarm row's deletion commit together.
func (c *Counter) Alarm(ctx context.Context, info cell.AlarmInfo) error {
	_, err := c.Add(ctx, 1000)
	return err
}

// Options configure the app.
type Options struct {
	// Node names this node in X-Cellb-Node. Default "local".
	Node string
}

// App serves the contract over a runtime.
type App struct {
	// NS is the registered class.
	NS   *cell.Namespace[*Counter]
	node string
}

// Register registers the class on rt. Register before the runtime serves
// calls (and before a wake service runs on it).
func Register(rt *cell.Runtime, o Options) (*App, error) {
	ns, err := cell.Register(rt, Class, New)
	if err != nil {
		return nil, err
	}
	if o.Node == "" {
		o.Node = "local"
	}
	return &App{NS: ns, node: o.Node}, nil
}

// reply is what a counter call returns through the output gate.
type reply struct {
	Value    int64
	Alarm    int64  // Unix ms of the alarm set, for the alarm route
	Bookmark string // for the bookmark route, whose body holds only it
	Undo     string // for the restore route, whose body holds only it
	Epoch    uint64
}

// Routes adds the app's routes to mux.
func (a *App) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /counter/{name}", a.handle(nil, func(ctx context.Context, c *Counter, r *http.Request) (reply, error) {
		v, err := c.Add(ctx, 1)
		return reply{Value: v, Epoch: c.Epoch()}, err
	}))
	mux.HandleFunc("GET /counter/{name}", a.handle(nil, func(ctx context.Context, c *Counter, r *http.Request) (reply, error) {
		v, err := c.Value(ctx)
		return reply{Value: v, Epoch: c.Epoch()}, err
	}))
	mux.HandleFunc("DELETE /counter/{name}", a.handle(nil, func(ctx context.Context, c *Counter, r *http.Request) (reply, error) {
		if err := c.DeleteAll(ctx); err != nil {
			return reply{}, err
		}
		v, err := c.Value(ctx)
		return reply{Value: v, Epoch: c.Epoch()}, err
	}))
	mux.HandleFunc("POST /counter/{name}/alarm", a.handle(checkAlarm, func(ctx context.Context, c *Counter, r *http.Request) (reply, error) {
		in, _ := strconv.ParseInt(r.URL.Query().Get("in"), 10, 64)
		at := time.Now().Add(time.Duration(in) * time.Millisecond)
		if err := c.SetAlarm(ctx, at); err != nil {
			return reply{}, err
		}
		v, err := c.Value(ctx)
		return reply{Value: v, Alarm: at.UnixMilli(), Epoch: c.Epoch()}, err
	}))
	mux.HandleFunc("GET /counter/{name}/bookmark", a.handle(checkAt, func(ctx context.Context, c *Counter, r *http.Request) (reply, error) {
		var at time.Time
		if q := r.URL.Query().Get("at"); q != "" {
			ms, _ := strconv.ParseInt(q, 10, 64)
			at = time.UnixMilli(ms)
		}
		b, err := c.Bookmark(ctx, at)
		if err != nil {
			return reply{}, bookmarkError(err)
		}
		return reply{Bookmark: b, Epoch: c.Epoch()}, nil
	}))
	// The restore is recorded by one call; a second one restarts the
	// object (Abort ends the handler that calls it, so its reply could
	// not carry the undo bookmark).
	mux.HandleFunc("POST /counter/{name}/restore", a.handle(checkBookmark, func(ctx context.Context, c *Counter, r *http.Request) (reply, error) {
		undo, err := c.RestoreOnNextSession(ctx, r.URL.Query().Get("bookmark"))
		if err != nil {
			return reply{}, bookmarkError(err)
		}
		return reply{Undo: undo, Epoch: c.Epoch()}, nil
	}))
}

// statusError answers err with its own status (httperr.StatusError).
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string   { return e.err.Error() }
func (e *statusError) Unwrap() error   { return e.err }
func (e *statusError) HTTPStatus() int { return e.status }

// bookmarkError gives the bookmark errors their statuses: a time before
// the history kept, or a bookmark no longer restorable, is 404 (nothing is
// there), a bookmark after the current state 400, and a log without
// bookmarks (or a cell that cannot restore them) 501.
func bookmarkError(err error) error {
	var (
		tooOld   *durability.BookmarkTooOldError
		gone     *durability.BookmarkNotRestorableError
		future   *durability.BookmarkInFutureError
		none     *durability.NoBookmarksError
		noEpoch  *durability.RestoreNeedsEpochError
		unsupp   *durability.RestoreUnsupportedError
		notKnown *durability.BookmarkSyntaxError
	)
	switch {
	case errors.As(err, &tooOld), errors.As(err, &gone):
		return &statusError{http.StatusNotFound, err}
	case errors.As(err, &future), errors.As(err, &notKnown):
		return &statusError{http.StatusBadRequest, err}
	case errors.As(err, &none), errors.As(err, &noEpoch), errors.As(err, &unsupp):
		return &statusError{http.StatusNotImplemented, err}
	}
	return err
}

func validate(r *http.Request, check func(*http.Request) error) error {
	name := r.PathValue("name")
	if name == "" || len(name) > MaxNameLen {
		return httperr.BadInput("counter name must be 1 to %d bytes", MaxNameLen)
	}
	if check != nil {
		return check(r)
	}
	return nil
}

// checkAlarm checks the alarm route's in.
func checkAlarm(r *http.Request) error {
	in := r.URL.Query().Get("in")
	ms, err := strconv.ParseInt(in, 10, 64)
	if err != nil || ms < 0 || ms > 366*24*3600*1000 {
		return httperr.BadInput("in must be a whole number of milliseconds from 0 to one year, not %q", in)
	}
	return nil
}

// checkAt checks the bookmark route's optional at.
func checkAt(r *http.Request) error {
	if !r.URL.Query().Has("at") {
		return nil
	}
	at := r.URL.Query().Get("at")
	if ms, err := strconv.ParseInt(at, 10, 64); err != nil || ms <= 0 {
		return httperr.BadInput("at must be a time in Unix milliseconds, not %q", at)
	}
	return nil
}

// checkBookmark checks the restore route's bookmark.
func checkBookmark(r *http.Request) error {
	b := r.URL.Query().Get("bookmark")
	if _, err := durability.ParseBookmark(b); err != nil {
		return httperr.BadInput("bookmark must be a bookmark from GET /counter/<name>/bookmark: %v", err)
	}
	return nil
}

func (a *App) handle(check func(*http.Request) error, fn func(ctx context.Context, c *Counter, r *http.Request) (reply, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := validate(r, check); err != nil {
			httperr.Write(w, err)
			return
		}
		// Served by a core/host node, a call for a cell another node or
		// process owns sends this request there (see docs/embedding.md):
		// the handler needs no routing of its own.
		stub := a.NS.Get(a.NS.IDFromName(r.PathValue("name")))
		out, err := cell.Call(r.Context(), stub, func(ctx context.Context, c *Counter) (reply, error) {
			return fn(ctx, c, r)
		})
		if err != nil {
			httperr.Write(w, err)
			return
		}
		if out.Undo != "" {
			// The restore is recorded: restart the object so the next
			// call runs on the restored state.
			_, err := cell.Call(r.Context(), stub, func(ctx context.Context, c *Counter) (int, error) {
				c.Restart(ctx, "restore bookmark "+r.URL.Query().Get("bookmark"))
				return 0, nil
			})
			var broken *cell.BrokenObjectError
			if err != nil && !errors.As(err, &broken) {
				httperr.Write(w, err)
				return
			}
		}
		w.Header().Set("X-Cellb-Node", a.node)
		w.Header().Set("X-Cellb-Epoch", strconv.FormatUint(out.Epoch, 10))
		w.Header().Set("Content-Type", "application/json")
		if out.Bookmark != "" {
			_ = json.NewEncoder(w).Encode(map[string]string{"bookmark": out.Bookmark})
			return
		}
		if out.Undo != "" {
			_ = json.NewEncoder(w).Encode(map[string]string{"undo": out.Undo})
			return
		}
		body := map[string]int64{"value": out.Value}
		if out.Alarm != 0 {
			body["alarm"] = out.Alarm
		}
		_ = json.NewEncoder(w).Encode(body)
	}
}
