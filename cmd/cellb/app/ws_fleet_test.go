package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cellb/cellb/examples/chatroom"
)

// TestFleetWebSocketChatRoom runs the chat room over WebSockets on a
// three-node fleet of `cellb serve` processes on a local-files bucket.
func TestFleetWebSocketChatRoom(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	runFleetWebSocketChatRoom(t, "file://"+t.TempDir())
}

// TestFleetWebSocketChatRoomS3 runs it on the S3 server of .ci/run.
func TestFleetWebSocketChatRoomS3(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	useS3(t)
	runFleetWebSocketChatRoom(t, fmt.Sprintf("s3://%s/ws-%d", os.Getenv("CELLB_TEST_S3_BUCKET"), time.Now().UnixNano()))
}

// roomEvictions reads the idle evictions of Room cells from a node's
// /metrics.
func roomEvictions(t testing.TB, admin string) int {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "cellb_cell_evictions_total{") && strings.Contains(line, `class="Room"`) && strings.Contains(line, `reason="idle"`) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

// gaugeValue reads an unlabelled gauge from a node's /metrics (-1 when it
// is not there).
func gaugeValue(t testing.TB, admin, name string) int {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && (f[0] == name || strings.HasPrefix(f[0], name+"{")) {
			v, _ := strconv.ParseFloat(f[1], 64)
			return int(v)
		}
	}
	return -1
}

func dialRoom(ctx context.Context, base, room string) (*websocket.Conn, error) {
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/room/"+room+"/ws", nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(1 << 20)
	return c, nil
}

// readMessage reads one broadcast of the room.
func readMessage(ctx context.Context, c *websocket.Conn) (chatroom.Message, error) {
	var m chatroom.Message
	_, b, err := c.Read(ctx)
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}

// runFleetWebSocketChatRoom: 12 sockets join one room through the three
// nodes (the owner holds them; the other two relay), and each sends 10
// messages at once: every socket receives all 120 in one order, and a
// POST through another node too. The room then hibernates on its owner,
// and one more message reaches all 12. The
// owner is SIGKILLed: the sockets relayed by the other nodes close with
// 1012, and a socket opened again through a survivor works, on a room
// that kept every message.
func runFleetWebSocketChatRoom(t *testing.T, bucket string) {
	bin := cellbBinary(t)
	names := []string{"wa", "wb", "wc"}
	nodes := make([]*proc, 3)
	admins := make([]string, 3)
	for i, name := range names {
		admins[i] = freeAddr(t)
		nodes[i] = startNode(t, bin, bucket, name, "--peer-listen", "127.0.0.1:0", "--ttl", "2s",
			"--idle", "500ms", "--alarm-residency", "-1s", "--admin-listen", admins[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The first socket, through wa, makes wa the room's owner.
	const sockets, each = 12, 10
	conns := make([]*websocket.Conn, sockets)
	for i := range conns {
		c, err := dialRoom(ctx, nodes[i%3].url, "lobby")
		if err != nil {
			t.Fatalf("socket %d through %s: %v", i, names[i%3], err)
		}
		defer c.CloseNow()
		conns[i] = c
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if err := c.Write(ctx, websocket.MessageText, []byte(fmt.Sprintf("s%d-m%d", i, j))); err != nil {
					t.Errorf("socket %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	orders := make([][]string, sockets)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for range sockets * each {
				m, err := readMessage(ctx, c)
				if err != nil {
					t.Errorf("socket %d after %d messages: %v", i, len(orders[i]), err)
					return
				}
				if m.ID <= last {
					t.Errorf("socket %d: id %d after %d", i, m.ID, last)
				}
				last = m.ID
				orders[i] = append(orders[i], m.Text)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i := range orders {
		if strings.Join(orders[i], ",") != strings.Join(orders[0], ",") {
			t.Fatalf("socket %d received another order than socket 0", i)
		}
	}
	// A POST through a node that does not own the room is broadcast too.
	resp, err := http.Post(nodes[2].url+"/room/lobby", "text/plain", strings.NewReader("posted"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST through %s: %s", names[2], resp.Status)
	}
	for i, c := range conns {
		m, err := readMessage(ctx, c)
		if err != nil || m.Text != "posted" {
			t.Fatalf("socket %d: %+v %v, want the POSTed message", i, m, err)
		}
	}
	// Hibernation: the owner evicts the idle room; its sockets stay open.
	before := roomEvictions(t, admins[0])
	deadline := time.Now().Add(30 * time.Second)
	for roomEvictions(t, admins[0]) == before {
		if time.Now().After(deadline) {
			t.Fatalf("the room never hibernated on its owner (see %s)", nodes[0].logf.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The owner holds all 12 (those the others relay included), asleep.
	if n := gaugeValue(t, admins[0], "cellb_websocket_open"); n != sockets {
		t.Fatalf("the owner reports %d open sockets, want %d", n, sockets)
	}
	if n := gaugeValue(t, admins[1], "cellb_websocket_open"); n != 0 {
		t.Fatalf("a relaying node reports %d open sockets, want 0", n)
	}
	if err := conns[4].Write(ctx, websocket.MessageText, []byte("after hibernation")); err != nil {
		t.Fatal(err)
	}
	for i, c := range conns {
		m, err := readMessage(ctx, c)
		if err != nil || m.Text != "after hibernation" {
			t.Fatalf("socket %d after hibernation: %+v %v", i, m, err)
		}
	}
	// The owner dies: the sockets the survivors relay close with 1012.
	nodes[0].kill()
	for i, c := range conns {
		_, _, err := c.Read(ctx)
		if i%3 == 0 {
			if err == nil {
				t.Fatalf("socket %d (on the dead owner) still reads", i)
			}
			continue
		}
		if code := websocket.CloseStatus(err); code != websocket.StatusServiceRestart {
			t.Fatalf("socket %d through %s: %v (code %v), want a Close with 1012", i, names[i%3], err, code)
		}
	}
	// A client reconnects through a survivor: once the dead owner's lease
	// ran out the room is taken there, with every message.
	var c *websocket.Conn
	deadline = time.Now().Add(60 * time.Second)
	for {
		var err error
		if c, err = dialRoom(ctx, nodes[1].url, "lobby"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnect through %s: %v", names[1], err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte("reconnected")); err != nil {
		t.Fatal(err)
	}
	m, err := readMessage(ctx, c)
	if err != nil || m.Text != "reconnected" {
		t.Fatalf("after the reconnect: %+v %v", m, err)
	}
	resp, err = http.Get(nodes[2].url + "/room/lobby")
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Messages []chatroom.Message }
	if err := jsonDecode(resp, &body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := len(body.Messages); n != sockets*each+3 {
		t.Fatalf("the room holds %d messages, want %d", n, sockets*each+3)
	}
}
