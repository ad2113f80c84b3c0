// Package chatroom is CellB's second example app: chat rooms whose
// messages expire, one cell per room, served over HTTP.
//
//	POST /room/<name>?ttl=MS   post the request body as a message (at most
//	                           4 KiB); 200 {"id":N,"expires":MS} once durable
//	GET  /room/<name>          200 {"messages":[{"id","at","text"},...]}
//	GET  /room/<name>/ws       WebSocket upgrade: every text message a
//	                           socket sends is posted (default TTL) and
//	                           every message posted, over a socket or
//	                           POST, is sent to every socket of the room
//	                           as {"id","at","text"}, in id order
//
// The room's sockets are hibernatable (docs/websockets.md): the room may be
// evicted between messages while its sockets stay open on the node, and
// the next message activates it again. A broadcast leaves once the post it
// announces is durable.
//
// Expiry is the cell's alarm: it is set for the oldest message's expiry;
// when it fires, the handler deletes what has expired and sets the alarm
// for the next one, all in one commit. An index on the expiry column keeps
// those lookups (one per post) from scanning the whole table.
//
// Errors are answered as core/httperr maps them, with the error's message
// as the body.
package chatroom

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/httperr"
)

// Class is the class name the room registers; it keys the cells.
const Class = "Room"

const (
	// MaxNameLen keeps names (and the URLs that carry them) reasonable.
	MaxNameLen = 256
	// MaxMessageBytes bounds one message.
	MaxMessageBytes = 4 << 10
	// DefaultTTL is how long a message lives without ?ttl.
	DefaultTTL = 10 * time.Minute
)

// The schema. The index is created on every open, so rooms created before
// it existed get it too.
const (
	createTable = `CREATE TABLE IF NOT EXISTS messages(
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		at_ms INTEGER NOT NULL,
		expires_ms INTEGER NOT NULL,
		text TEXT NOT NULL)`
	createExpiryIndex = `CREATE INDEX IF NOT EXISTS messages_expires ON messages(expires_ms)`
)

// The queries on the expiry column, each answered from the index.
const (
	nextExpiry    = "SELECT min(expires_ms) FROM messages"
	deleteExpired = "DELETE FROM messages WHERE expires_ms <= ?"
	listLive      = "SELECT id, at_ms, text FROM messages WHERE expires_ms > ? ORDER BY id"
)

// Room is the chat room cell.
type Room struct {
	st *cell.State
}

// New is the class's constructor: it creates the schema.
func New(ctx context.Context, st *cell.State) (*Room, error) {
	if _, err := st.SQL().Exec(ctx, createTable); err != nil {
		return nil, err
	}
	if _, err := st.SQL().Exec(ctx, createExpiryIndex); err != nil {
		return nil, err
	}
	return &Room{st: st}, nil
}

// Post stores a message, makes sure the alarm fires by its expiry and
// sends it to every socket of the room (each send leaves once the post is
// durable). It returns the message's id and expiry (Unix ms).
func (r *Room) Post(ctx context.Context, text string, ttl time.Duration) (id, expires int64, err error) {
	now := r.st.Now() // the runtime's clock: a test moves it (core/cellbtest)
	expires = now.Add(ttl).UnixMilli()
	res, err := r.st.SQL().Exec(ctx, "INSERT INTO messages(at_ms, expires_ms, text) VALUES (?, ?, ?)", now.UnixMilli(), expires, text)
	if err != nil {
		return 0, 0, err
	}
	if err := r.armForNext(ctx); err != nil {
		return 0, 0, err
	}
	r.broadcast(ctx, Message{ID: res.LastInsertID, At: now.UnixMilli(), Text: text})
	return res.LastInsertID, expires, nil
}

// broadcast sends m to every socket of the room. A socket that is closing
// refuses it, which is no failure of the post.
func (r *Room) broadcast(ctx context.Context, m Message) {
	b, _ := json.Marshal(m)
	for _, ws := range r.st.WebSockets("") {
		_ = ws.SendText(ctx, string(b))
	}
}

// WebSocketMessage posts a text message a socket sent (binary messages are
// ignored); one over MaxMessageBytes is answered to its sender alone with
// {"error":...}.
func (r *Room) WebSocketMessage(ctx context.Context, ws *cell.WebSocket, data []byte, binary bool) error {
	if binary {
		return nil
	}
	if len(data) == 0 || len(data) > MaxMessageBytes {
		b, _ := json.Marshal(map[string]string{"error": "a message is 1 to " + strconv.Itoa(MaxMessageBytes) + " bytes"})
		return ws.SendText(ctx, string(b))
	}
	_, _, err := r.Post(ctx, string(data), DefaultTTL)
	return err
}

// armForNext sets the alarm at the earliest expiry, or clears it.
func (r *Room) armForNext(ctx context.Context) error {
	var next *int64
	if err := r.st.SQL().QueryRow(ctx, nextExpiry).Scan(&next); err != nil {
		return err
	}
	if next == nil {
		return r.st.DeleteAlarm(ctx)
	}
	at, set, err := r.st.GetAlarm(ctx)
	if err != nil {
		return err
	}
	if set && at.UnixMilli() <= *next {
		return nil
	}
	return r.st.SetAlarm(ctx, time.UnixMilli(*next))
}

// Alarm deletes expired messages and arms for the next expiry.
func (r *Room) Alarm(ctx context.Context, info cell.AlarmInfo) error {
	if _, err := r.st.SQL().Exec(ctx, deleteExpired, r.st.Now().UnixMilli()); err != nil {
		return err
	}
	return r.armForNext(ctx)
}

// Message is one message as the room lists it.
type Message struct {
	ID   int64  `json:"id"`
	At   int64  `json:"at"`
	Text string `json:"text"`
}

// List returns the messages that have not expired, oldest first.
func (r *Room) List(ctx context.Context) ([]Message, error) {
	rows, err := r.st.SQL().Query(ctx, listLive, r.st.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Message{}
	for rows.Next() {
		var m Message
		if err := rows.Scan(&m.ID, &m.At, &m.Text); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Options configure the app (none yet: served by a core/host node, its
// calls reach their cell's owner without help; see docs/embedding.md).
type Options struct{}

// App serves the rooms over a runtime.
type App struct {
	// NS is the registered class.
	NS *cell.Namespace[*Room]
}

// Register registers the class on rt. Register before the runtime serves
// calls (and before a wake service runs on it).
func Register(rt *cell.Runtime, o Options) (*App, error) {
	ns, err := cell.Register(rt, Class, New)
	if err != nil {
		return nil, err
	}
	return &App{NS: ns}, nil
}

func roomName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if name == "" || len(name) > MaxNameLen {
		return "", httperr.BadInput("room name must be 1 to %d bytes", MaxNameLen)
	}
	return name, nil
}

// Routes adds the app's routes to mux.
func (a *App) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /room/{name}", func(w http.ResponseWriter, r *http.Request) {
		name, err := roomName(r)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		ttl := DefaultTTL
		if q := r.URL.Query().Get("ttl"); q != "" {
			ms, err := strconv.ParseInt(q, 10, 64)
			if err != nil || ms < 1 || ms > 7*24*3600*1000 {
				httperr.Write(w, httperr.BadInput("ttl must be a whole number of milliseconds from 1 to one week, not %q", q))
				return
			}
			ttl = time.Duration(ms) * time.Millisecond
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageBytes+1))
		if err != nil || len(body) == 0 || len(body) > MaxMessageBytes {
			httperr.Write(w, httperr.BadInput("the message is the request body: 1 to %d bytes", MaxMessageBytes))
			return
		}
		type posted struct{ id, expires int64 }
		p, err := cell.Call(r.Context(), a.NS.Get(a.NS.IDFromName(name)), func(ctx context.Context, room *Room) (posted, error) {
			id, exp, err := room.Post(ctx, string(body), ttl)
			return posted{id, exp}, err
		})
		id, expires := p.id, p.expires
		if err != nil {
			httperr.Write(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"id": id, "expires": expires})
	})
	mux.HandleFunc("GET /room/{name}", func(w http.ResponseWriter, r *http.Request) {
		name, err := roomName(r)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		msgs, err := cell.Call(r.Context(), a.NS.Get(a.NS.IDFromName(name)), func(ctx context.Context, room *Room) ([]Message, error) {
			return room.List(ctx)
		})
		if err != nil {
			httperr.Write(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"messages": msgs})
	})
	mux.HandleFunc("GET /room/{name}/ws", func(w http.ResponseWriter, r *http.Request) {
		name, err := roomName(r)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		err = cell.Upgrade(w, r, a.NS.Get(a.NS.IDFromName(name)), func(ctx context.Context, room *Room, ws *cell.WebSocket) error {
			return room.st.AcceptWebSocket(ws)
		})
		if err != nil && !errors.Is(err, cell.ErrUpgradeAnswered) {
			httperr.Write(w, err)
		}
	})
}
