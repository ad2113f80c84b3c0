package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cellb/cellb/core/cell"
)

// The second example: chat rooms whose messages expire, one cell per room.
//
//	POST /room/<name>?ttl=MS   post the request body as a message (at most
//	                           4 KiB); 200 {"id":N,"expires":MS} once durable
//	GET  /room/<name>          200 {"messages":[{"id","at","text"},...]}
//
// Expiry is the cell's alarm: it is set for the oldest message's expiry;
// when it fires, the handler deletes what has expired and sets the alarm
// for the next one, all in one commit.

// Room is the chat room cell.
type Room struct {
	st *cell.State
}

const (
	maxMessageBytes = 4 << 10
	defaultRoomTTL  = 10 * time.Minute
)

func newRoom(ctx context.Context, st *cell.State) (*Room, error) {
	_, err := st.SQL().Exec(ctx, `CREATE TABLE IF NOT EXISTS messages(
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		at_ms INTEGER NOT NULL,
		expires_ms INTEGER NOT NULL,
		text TEXT NOT NULL)`)
	return &Room{st: st}, err
}

// post stores a message and makes sure the alarm fires by its expiry.
func (r *Room) post(ctx context.Context, text string, ttl time.Duration) (int64, int64, error) {
	now := time.Now()
	expires := now.Add(ttl).UnixMilli()
	res, err := r.st.SQL().Exec(ctx, "INSERT INTO messages(at_ms, expires_ms, text) VALUES (?, ?, ?)", now.UnixMilli(), expires, text)
	if err != nil {
		return 0, 0, err
	}
	return res.LastInsertID, expires, r.armForNext(ctx)
}

// armForNext sets the alarm at the earliest expiry, or clears it.
func (r *Room) armForNext(ctx context.Context) error {
	var next *int64
	if err := r.st.SQL().QueryRow(ctx, "SELECT min(expires_ms) FROM messages").Scan(&next); err != nil {
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
	if _, err := r.st.SQL().Exec(ctx, "DELETE FROM messages WHERE expires_ms <= ?", time.Now().UnixMilli()); err != nil {
		return err
	}
	return r.armForNext(ctx)
}

type roomMessage struct {
	ID   int64  `json:"id"`
	At   int64  `json:"at"`
	Text string `json:"text"`
}

func (r *Room) list(ctx context.Context) ([]roomMessage, error) {
	rows, err := r.st.SQL().Query(ctx, "SELECT id, at_ms, text FROM messages WHERE expires_ms > ? ORDER BY id", time.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []roomMessage{}
	for rows.Next() {
		var m roomMessage
		if err := rows.Scan(&m.ID, &m.At, &m.Text); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// roomApp serves the rooms.
type roomApp struct {
	ns      *cell.Namespace[*Room]
	node    string
	forward forwardFunc
}

func (a *roomApp) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /room/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if name == "" || len(name) > maxNameLen {
			writeError(w, badInput{fmt.Sprintf("room name must be 1 to %d bytes", maxNameLen)})
			return
		}
		ttl := defaultRoomTTL
		if q := r.URL.Query().Get("ttl"); q != "" {
			ms, err := strconv.ParseInt(q, 10, 64)
			if err != nil || ms < 1 || ms > 7*24*3600*1000 {
				writeError(w, badInput{fmt.Sprintf("ttl must be a whole number of milliseconds from 1 to one week, not %q", q)})
				return
			}
			ttl = time.Duration(ms) * time.Millisecond
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxMessageBytes+1))
		if err != nil || len(body) == 0 || len(body) > maxMessageBytes {
			writeError(w, badInput{fmt.Sprintf("the message is the request body: 1 to %d bytes", maxMessageBytes)})
			return
		}
		type posted struct{ id, expires int64 }
		res, answered, err := callRouted(w, r, body, a.forward, func() (posted, error) {
			return cell.Call(r.Context(), a.ns.Get(a.ns.IDFromName(name)), func(ctx context.Context, room *Room) (posted, error) {
				id, exp, err := room.post(ctx, string(body), ttl)
				return posted{id, exp}, err
			})
		})
		if answered {
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"id": res.id, "expires": res.expires})
	})
	mux.HandleFunc("GET /room/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if name == "" || len(name) > maxNameLen {
			writeError(w, badInput{fmt.Sprintf("room name must be 1 to %d bytes", maxNameLen)})
			return
		}
		msgs, answered, err := callRouted(w, r, nil, a.forward, func() ([]roomMessage, error) {
			return cell.Call(r.Context(), a.ns.Get(a.ns.IDFromName(name)), func(ctx context.Context, room *Room) ([]roomMessage, error) {
				return room.list(ctx)
			})
		})
		if answered {
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"messages": msgs})
	})
}
