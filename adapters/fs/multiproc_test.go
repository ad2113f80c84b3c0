//go:build unix

package fs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
)

// answerTimeout bounds the wait for any child's answer. It only catches
// hangs (a lock never released); it does not measure speed.
const answerTimeout = 60 * time.Second

// TestMultiProcessRaces races create-only and compare-and-swap writes on
// one key between OS processes, round after round, killing a contender
// with SIGKILL at a random moment in some rounds. Each round must have
// exactly one winner: the object holds the body of one contender, that
// contender said "won" (or was killed before it could say anything), and
// every other survivor said "lost".
func TestMultiProcessRaces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	h := newHub(t, dir)
	s := openT(t, dir)
	r := rand.New(rand.NewPCG(3, 4))
	const procs, rounds = 4, 16
	kids := map[int]*child{}
	nextID := 0
	spawn := func() {
		c := h.start(nextID)
		kids[nextID] = c
		nextID++
	}
	for range procs {
		spawn()
	}
	kills := 0
	dead := map[int]bool{}

	race := func(kind string, round int, key string, command func(*child)) {
		t.Helper()
		contenders := map[int]*child{}
		for id, c := range kids {
			contenders[id] = c
			command(c)
		}
		victim := -1
		if round%3 == 2 {
			// Kill one contender at a random moment of its write.
			ids := make([]int, 0, len(contenders))
			for id := range contenders {
				ids = append(ids, id)
			}
			victim = ids[r.IntN(len(ids))]
			time.Sleep(time.Duration(r.IntN(20_000)) * time.Microsecond)
			contenders[victim].kill()
			delete(kids, victim)
			dead[victim] = true
			kills++
		}
		said := map[int]string{}
		for len(said) < len(contenders)-btoi(victim >= 0) {
			ev := h.next(answerTimeout)
			if dead[ev.c.id] {
				continue // whatever a killed contender managed to say is moot
			}
			if ev.line == "" {
				ev.c.diedf(t)
			}
			res, r, _ := strings.Cut(ev.line, " ")
			if (res != "won" && res != "lost") || r != strconv.Itoa(round) {
				t.Fatalf("%s round %d: child %d said %q", kind, round, ev.c.id, ev.line)
			}
			said[ev.c.id] = res
		}
		o := getT(t, s, key)
		var holder int
		if _, err := fmt.Sscanf(string(o.Data), kind+" %d child %d", new(int), &holder); err != nil {
			t.Fatalf("%s round %d: the object holds %q: %v", kind, round, o.Data, err)
		}
		var winners []int
		for id, res := range said {
			if res == "won" {
				winners = append(winners, id)
			}
		}
		switch {
		case holder == victim && len(winners) == 0:
		case len(winners) == 1 && winners[0] == holder:
		default:
			t.Fatalf("%s round %d: the object holds child %d's body, survivors who won: %v (killed: %d)", kind, round, holder, winners, victim)
		}
		for len(kids) < procs {
			spawn()
		}
	}
	for round := range rounds {
		race("create", round, fmt.Sprintf("race/create-%d", round), func(c *child) { c.send(t, "create %d", round) })
	}
	for round := range rounds {
		base := putT(t, s, "race/cas", fmt.Sprintf("base %d child -1", round), store.PutOptions{})
		race("cas", round, "race/cas", func(c *child) { c.send(t, "cas %d %s", round, base) })
	}
	checkWhole(t, s, kills)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestMultiProcessCounterSurvivesSIGKILL has processes increment one
// counter by compare-and-swap loops while the test kills them with
// SIGKILL: at random moments, and right after a child reports that it
// holds the key's lock and is about to publish. Replacements join in.
// No acknowledged increment may be lost (no two acknowledgements of one
// value, and the counter ends at or above every acknowledged value, above
// them by at most the number of kills), the survivors keep going, and
// afterwards every object is whole and the lock is free. A second phase
// without kills checks the exact count.
func TestMultiProcessCounterSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	h := newHub(t, dir)
	s := openT(t, dir)
	const key = "race/counter"
	putT(t, s, key, "0 start", store.PutOptions{Condition: store.IfAbsent})

	r := rand.New(rand.NewPCG(5, 6))
	const procs = 4
	const wantAcks, wantKills, wantLockKills = 150, 8, 4
	kids := map[int]*child{}
	dead := map[int]bool{}
	nextID := 0
	spawn := func() {
		c := h.start(nextID, childPauseEnv+"=3ms")
		c.send(t, "count %s %d", key, 1<<30)
		kids[nextID] = c
		nextID++
	}
	kill := func(c *child) {
		c.kill()
		delete(kids, c.id)
		dead[c.id] = true
		spawn()
	}
	for range procs {
		spawn()
	}
	acked := map[int]int{} // value -> child
	kills, lockKills, acksSinceLockKill := 0, 0, 0
	deadline := time.Now().Add(3 * time.Minute)
	nextKill := time.Now().Add(time.Duration(30+r.IntN(120)) * time.Millisecond)
	for len(acked) < wantAcks || kills < wantKills || lockKills < wantLockKills || acksSinceLockKill < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("too slow: %d acknowledged increments, %d kills (%d holding the lock)", len(acked), kills, lockKills)
		}
		if time.Now().After(nextKill) {
			ids := make([]int, 0, len(kids))
			for id := range kids {
				ids = append(ids, id)
			}
			kill(kids[ids[r.IntN(len(ids))]])
			kills++
			nextKill = time.Now().Add(time.Duration(30+r.IntN(120)) * time.Millisecond)
		}
		var ev event
		select {
		case ev = <-h.events:
		case <-time.After(answerTimeout):
			t.Fatalf("no progress in %v: is the lock wedged?", answerTimeout)
		case <-time.After(time.Until(nextKill)):
			continue
		}
		switch {
		case ev.line == "":
			if !dead[ev.c.id] {
				ev.c.diedf(t)
			}
		case ev.line == "inlock":
			if !dead[ev.c.id] && r.IntN(6) == 0 {
				kill(ev.c) // it is sleeping inside the lock, about to rename
				kills++
				lockKills++
				acksSinceLockKill = 0
			}
		case strings.HasPrefix(ev.line, "inc "):
			v, err := strconv.Atoi(strings.TrimPrefix(ev.line, "inc "))
			if err != nil {
				t.Fatalf("child %d said %q", ev.c.id, ev.line)
			}
			if other, dup := acked[v]; dup {
				t.Fatalf("lost update: value %d acknowledged by child %d and child %d", v, other, ev.c.id)
			}
			acked[v] = ev.c.id
			acksSinceLockKill++
		default:
			t.Fatalf("child %d said %q: %s", ev.c.id, ev.line, ev.c.stderr)
		}
	}
	// Stop everyone, mid-write or not, and read every line they left.
	for _, c := range kids {
		c.kill()
		dead[c.id] = true
		kills++
	}
	for drained := false; !drained; {
		select {
		case ev := <-h.events:
			if v, err := strconv.Atoi(strings.TrimPrefix(ev.line, "inc ")); err == nil {
				if other, dup := acked[v]; dup {
					t.Fatalf("lost update: value %d acknowledged by child %d and child %d", v, other, ev.c.id)
				}
				acked[v] = ev.c.id
			}
		case <-time.After(200 * time.Millisecond):
			drained = true
		}
	}
	o := getT(t, s, key)
	final, err := counterOf(o.Data)
	if err != nil {
		t.Fatalf("counter torn: %q", o.Data)
	}
	top := 0
	for v := range acked {
		top = max(top, v)
	}
	t.Logf("%d acknowledged increments, counter at %d, %d kills (%d inside the lock)", len(acked), final, kills, lockKills)
	if final < top || final < len(acked) || final > len(acked)+kills {
		t.Fatalf("counter at %d after %d acknowledged increments (highest %d) and %d kills", final, len(acked), top, kills)
	}
	checkWhole(t, s, kills)

	// Phase two: no kills, so the count must be exact.
	const exactKey, each = "race/exact", 12
	putT(t, s, exactKey, "0 start", store.PutOptions{Condition: store.IfAbsent})
	exact := map[int]*child{}
	for range procs {
		c := h.start(nextID)
		exact[nextID] = c
		nextID++
		c.send(t, "count %s %d", exactKey, each)
	}
	done, incs := 0, map[int]bool{}
	for done < procs {
		ev := h.next(answerTimeout)
		if dead[ev.c.id] {
			continue
		}
		switch {
		case ev.line == "done":
			done++
		case strings.HasPrefix(ev.line, "inc "):
			v, _ := strconv.Atoi(strings.TrimPrefix(ev.line, "inc "))
			if incs[v] {
				t.Fatalf("lost update: value %d acknowledged twice", v)
			}
			incs[v] = true
		default:
			t.Fatalf("child %d said %q: %s", ev.c.id, ev.line, ev.c.stderr)
		}
	}
	if o := getT(t, s, exactKey); !strings.HasPrefix(string(o.Data), strconv.Itoa(procs*each)+" ") || len(incs) != procs*each {
		t.Fatalf("after %d successful increments the counter holds %q", len(incs), o.Data)
	}
}

// checkWhole checks what crashed writers may leave behind: every object
// parses (no torn body), listings and Get agree on versions, temporary
// files are not listed, and every key's lock can be taken at once.
func checkWhole(t *testing.T, s *Store, kills int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l, err := store.ListAll(ctx, s, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range l.Objects {
		if !strings.HasPrefix(info.Key, "race/") {
			t.Fatalf("listing shows %q", info.Key)
		}
		o := getT(t, s, info.Key)
		var a, b int
		var word string
		if _, err := fmt.Sscanf(string(o.Data), "%s %d child %d", &word, &a, &b); err != nil {
			if _, err := counterOf(o.Data); err != nil {
				t.Fatalf("%s holds a torn body %q", info.Key, o.Data)
			}
		}
		if o.Version != info.Version || int64(len(o.Data)) != info.Size {
			t.Fatalf("%s: listed as %q/%d, read as %q/%d", info.Key, info.Version, info.Size, o.Version, len(o.Data))
		}
		// The lock is free: a swap on the current version goes through now.
		if _, err := s.Put(ctx, info.Key, append(o.Data, " checked"...), store.PutOptions{Condition: store.IfVersion(o.Version)}); err != nil {
			t.Fatalf("swap on %s after %d kills: %v", info.Key, kills, err)
		}
	}
}
