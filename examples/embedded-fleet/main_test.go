package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/store/memstore"
)

type answer struct {
	status int
	body   string
	value  int64
	node   string
}

func do(t *testing.T, method, url string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, body: string(b), node: resp.Header.Get("X-Cellb-Node")}
	if a.status == 200 {
		var v struct{ Value int64 }
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("%s %s: %q: %v", method, url, b, err)
		}
		a.value = v.Value
	}
	return a
}

// TestEmbeddedFleet drives the example's three nodes on one bucket: 24
// clients increment 12 counters through every node at once, and every
// call is answered 200 whichever node owns its cell (the others forward
// it); then one owner closes, and at once the next call for each of its
// cells, on another node, is answered by that node with the count so far.
func TestEmbeddedFleet(t *testing.T) {
	ctx := context.Background()
	bucket, dir := memstore.New(), t.TempDir()
	var nodes []*host.Host
	var urls []string
	for range 3 {
		h, url, err := startNode(ctx, bucket, dir)
		if err != nil {
			t.Fatal(err)
		}
		nodes, urls = append(nodes, h), append(urls, url)
		t.Cleanup(func() { h.Close(ctx) })
	}

	const clients, rounds, counters = 24, 6, 12
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				url := fmt.Sprintf("%s/counter/c%d", urls[c%3], (c+r)%counters)
				if a := do(t, "POST", url); a.status != 200 {
					t.Errorf("POST %s: %d %q", url, a.status, a.body)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Every node answers for every cell, with the owner's count.
	owner := map[string]string{}
	want := int64(clients * rounds / counters)
	for i := range counters {
		name := fmt.Sprintf("c%d", i)
		for _, u := range urls {
			a := do(t, "GET", u+"/counter/"+name)
			if a.status != 200 || a.value != want {
				t.Fatalf("GET %s from %s: %d %q value %d, want 200 value %d", name, u, a.status, a.body, a.value, want)
			}
			if prev, ok := owner[name]; ok && prev != a.node {
				t.Fatalf("%s answered by %s and by %s", name, prev, a.node)
			}
			owner[name] = a.node
		}
	}

	// The node owning the most cells closes; its cells are taken at once
	// by the next node called, with their state.
	count := map[string]int{}
	for _, n := range owner {
		count[n]++
	}
	gone := 0
	for i, h := range nodes {
		if count[h.Node()] > count[nodes[gone].Node()] {
			gone = i
		}
	}
	if count[nodes[gone].Node()] == 0 {
		t.Fatal("no node owns a cell")
	}
	if err := nodes[gone].Close(ctx); err != nil {
		t.Fatal(err)
	}
	next := urls[(gone+1)%3]
	nextNode := nodes[(gone+1)%3].Node()
	for name, n := range owner {
		if n != nodes[gone].Node() {
			continue
		}
		a := do(t, "POST", next+"/counter/"+name)
		if a.status != 200 || a.value != want+1 || a.node != nextNode {
			t.Fatalf("after %s closed, POST %s on %s: %d %q value %d by %q, want 200 value %d by %s",
				n, name, nextNode, a.status, a.body, a.value, a.node, want+1, nextNode)
		}
	}
}
