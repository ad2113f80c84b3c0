package celltest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/wsclient"
)

// WebSockets with hibernation (docs/websockets.md): events in order
// through the input gate, hibernation with the sockets kept open,
// attachments and tags that survive it, and sends behind the output gate.
func websocketCases() []caseDef {
	return []caseDef{
		{"websocket/order", caseWebSocketOrder},
		{"websocket/hibernation", caseWebSocketHibernation},
		{"websocket/attachment", caseWebSocketAttachment},
		{"websocket/send-held-until-durable", caseWebSocketSendHeld},
		{"websocket/failed-commit-closes-1011", caseWebSocketFailedCommit},
	}
}

// sockObj counts the messages it got in SQL and broadcasts each count to
// every socket, with the sender's tags and attachment.
type sockObj struct {
	st *cell.State
}

func (o *sockObj) WebSocketMessage(ctx context.Context, ws *cell.WebSocket, data []byte, binary bool) error {
	sql := o.st.SQL()
	if _, err := sql.Exec(ctx, "INSERT INTO m(x) VALUES (?)", string(data)); err != nil {
		return err
	}
	var n int64
	if err := sql.QueryRow(ctx, "SELECT count(*) FROM m").Scan(&n); err != nil {
		return err
	}
	var att string
	if _, err := ws.DeserializeAttachment(&att); err != nil {
		return err
	}
	out := fmt.Sprintf("%d|%s|%s|%s", n, data, strings.Join(ws.Tags(), ","), att)
	for _, s := range o.st.WebSockets("") {
		if err := s.SendText(ctx, out); err != nil && !errors.Is(err, cell.ErrWebSocketClosed) {
			return err
		}
	}
	return nil
}

// sockClass is a registered socket class served over HTTP: GET /<name>
// joins the object named name, tagged and with its name as attachment.
type sockClass struct {
	ns    *cell.Namespace[*sockObj]
	built atomic.Int64
	url   string
}

func (c *checkT) sockClass(rt *cell.Runtime, name string) *sockClass {
	sc := &sockClass{}
	ns, err := cell.Register(rt, name, func(ctx context.Context, st *cell.State) (*sockObj, error) {
		sc.built.Add(1)
		if _, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS m(x TEXT)"); err != nil {
			return nil, err
		}
		return &sockObj{st: st}, nil
	})
	if err != nil {
		c.fatalf("Register(%s): %v", name, err)
	}
	sc.ns = ns
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := strings.TrimPrefix(r.URL.Path, "/")
		err := cell.Upgrade(w, r, ns.Get(ns.IDFromName(who)), func(ctx context.Context, o *sockObj, ws *cell.WebSocket) error {
			if err := o.st.AcceptWebSocket(ws, "t-"+who); err != nil {
				return err
			}
			if err := ws.SerializeAttachment("a-" + who); err != nil {
				return err
			}
			return o.st.SetWebSocketAutoResponse("ping", "pong")
		})
		if err != nil && !errors.Is(err, cell.ErrUpgradeAnswered) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	c.defer_(srv.Close)
	sc.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return sc
}

// sock is a client socket whose messages a goroutine reads into got.
type sock struct {
	conn *wsclient.Conn
	got  chan string
	end  chan error // the read error that ended it
}

func (c *checkT) dialSock(sc *sockClass, name string) *sock {
	ctx, cancel := context.WithTimeout(c.ctx, c.h.Timeout)
	defer cancel()
	conn, err := wsclient.Dial(ctx, sc.url+"/"+name)
	if err != nil {
		c.fatalf("dial %s: %v", name, err)
	}
	c.defer_(func() { conn.CloseNow() })
	s := &sock{conn: conn, got: make(chan string, 1024), end: make(chan error, 1)}
	go func() {
		for {
			b, _, err := conn.Read(context.Background())
			if err != nil {
				s.end <- err
				return
			}
			s.got <- string(b)
		}
	}()
	return s
}

func (c *checkT) send(s *sock, text string) {
	if err := s.conn.WriteText(c.ctx, text); err != nil {
		c.fatalf("send %q: %v", text, err)
	}
}

// Every socket of an object receives its broadcasts in one order: 10
// sockets each sending 5 messages at once all see counts 1 to 50, in order.
// The log holds the commits until all 50 messages were handled, so every
// socket has its 50 frames queued at once.
func caseWebSocketOrder(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	sc := c.sockClass(rt, "SockOrder")
	const sockets, each = 10, 5
	ss := make([]*sock, sockets)
	for i := range ss {
		ss[i] = c.dialSock(sc, "room")
	}
	c.eventually("10 accepted sockets", func() bool { return rt.OpenWebSockets() == sockets })
	log.Hold()
	before := log.Appended()
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if err := s.conn.WriteText(c.ctx, fmt.Sprintf("s%d-%d", i, j)); err != nil {
					c.errorf("socket %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	c.eventually("the 50 messages' commits", func() bool { return log.Appended() >= before+sockets*each })
	log.Release()
	var first []string
	for i, s := range ss {
		var texts []string
		for n := 1; n <= sockets*each; n++ {
			msg := wait(c, s.got, fmt.Sprintf("broadcast %d on socket %d", n, i))
			count, text, _ := strings.Cut(msg, "|")
			if count != strconv.Itoa(n) {
				c.fatalf("socket %d: broadcast %q where count %d was due: out of order", i, msg, n)
			}
			texts = append(texts, text)
		}
		if i == 0 {
			first = texts
		} else if strings.Join(texts, ",") != strings.Join(first, ",") {
			c.fatalf("socket %d received the broadcasts in another order than socket 0", i)
		}
	}
}

// hibernate waits for the object to be evicted with its socket open. It
// moves the clock on at every look: a turn that ends after a move (the
// accept's, racing the caller) sets its idle deadline from the moved
// clock, which a single move would never reach.
func (c *checkT) hibernate(rt *cell.Runtime, clk *clock.Fake, key string) {
	c.eventually("the idle object to hibernate", func() bool {
		clk.Advance(time.Minute)
		for _, k := range rt.ActiveCells() {
			if k == key {
				return false
			}
		}
		return true
	})
	if rt.OpenWebSockets() == 0 {
		c.fatalf("the object's socket closed when it hibernated")
	}
}

// An idle object is evicted while its socket stays open; the automatic
// response is answered without building it again; the next message
// rebuilds it and is handled.
func caseWebSocketHibernation(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk, idle: time.Minute})
	sc := c.sockClass(rt, "SockHibernate")
	s := c.dialSock(sc, "h")
	c.send(s, "one")
	if got := wait(c, s.got, "the first answer"); !strings.HasPrefix(got, "1|one|") {
		c.fatalf("first answer %q", got)
	}
	c.hibernate(rt, clk, sc.ns.Key(sc.ns.IDFromName("h")))
	c.send(s, "ping")
	if got := wait(c, s.got, "the automatic response"); got != "pong" {
		c.fatalf("automatic response %q, want pong", got)
	}
	if n := sc.built.Load(); n != 1 {
		c.fatalf("the automatic response built the object again (%d constructions)", n)
	}
	c.send(s, "two")
	if got := wait(c, s.got, "the answer after hibernation"); !strings.HasPrefix(got, "2|two|") {
		c.fatalf("after hibernation %q, want count 2 (the first message's write kept)", got)
	}
	if n := sc.built.Load(); n != 2 {
		c.fatalf("%d constructions, want the message after hibernation to build the object once more", n)
	}
}

// A socket's tags and attachment survive the object's hibernation.
func caseWebSocketAttachment(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk, idle: time.Minute})
	sc := c.sockClass(rt, "SockAttach")
	s := c.dialSock(sc, "k")
	c.hibernate(rt, clk, sc.ns.Key(sc.ns.IDFromName("k")))
	c.send(s, "x")
	if got := wait(c, s.got, "the answer"); got != "1|x|t-k|a-k" {
		c.fatalf("answer %q, want the tags and attachment set at accept (1|x|t-k|a-k)", got)
	}
	if n := sc.built.Load(); n != 2 {
		c.fatalf("%d constructions: the object did not hibernate between accept and message", n)
	}
}

// A send made in a turn leaves only once the turn's commit is durable.
func caseWebSocketSendHeld(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	sc := c.sockClass(rt, "SockHeld")
	s := c.dialSock(sc, "g")
	c.eventually("the accepted socket", func() bool { return rt.OpenWebSockets() == 1 })
	log.Hold()
	before := log.Appended()
	c.send(s, "held")
	c.eventually("the message's commit", func() bool { return log.Appended() > before })
	time.Sleep(settle)
	select {
	case got := <-s.got:
		c.fatalf("%q left before its commit was durable", got)
	default:
	}
	log.Release()
	if got := wait(c, s.got, "the answer once durable"); !strings.HasPrefix(got, "1|held|") {
		c.fatalf("answer %q", got)
	}
}

// When the commit behind a send fails, the send never leaves and the
// socket is closed with 1011.
func caseWebSocketFailedCommit(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	sc := c.sockClass(rt, "SockFail")
	s := c.dialSock(sc, "f")
	c.eventually("the accepted socket", func() bool { return rt.OpenWebSockets() == 1 })
	log.Hold()
	before := log.Appended()
	c.send(s, "doomed")
	c.eventually("the message's commit", func() bool { return log.Appended() > before })
	log.Fail(errors.New("celltest: the bucket refused the commit"))
	err := wait(c, s.end, "the socket to close")
	select {
	case got := <-s.got:
		c.fatalf("%q left though its commit failed", got)
	default:
	}
	if code := wsclient.CloseCode(err); code != 1011 {
		c.fatalf("the socket ended with %v (code %d), want a Close with 1011", err, code)
	}
}
