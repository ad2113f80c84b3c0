package durability

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
)

var errClosed = errors.New("closed")

type recorder struct {
	mu      sync.Mutex
	batches [][]int
	gate    chan struct{} // when set, each upload waits for a receive
	entered chan struct{} // when set, each upload sends on it first
	fail    map[int]bool  // items whose batch fails
}

func (r *recorder) upload(batch []int) error {
	if r.entered != nil {
		r.entered <- struct{}{}
	}
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, slices.Clone(batch))
	for _, it := range batch {
		if r.fail[it] {
			return errors.New("bucket down")
		}
	}
	return nil
}

func waitDone(t *testing.T, d Durable) error {
	t.Helper()
	select {
	case <-d.Done():
		return d.Err()
	case <-time.After(5 * time.Second):
		t.Fatal("never resolved")
		return nil
	}
}

func item(v int) func() (int, error) { return func() (int, error) { return v, nil } }

// Commits queued while an upload is in flight go up together, in order.
func TestPipelineGroupsCommitsInOrder(t *testing.T) {
	r := &recorder{gate: make(chan struct{})}
	p := NewPipeline(PipelineOptions[int]{Upload: r.upload, Closed: errClosed})
	first := p.Append(item(1))
	time.Sleep(10 * time.Millisecond) // the uploader takes 1 and waits at the gate
	var rest []Durable
	for v := 2; v <= 5; v++ {
		rest = append(rest, p.Append(item(v)))
	}
	r.gate <- struct{}{}
	r.gate <- struct{}{}
	for _, d := range append([]Durable{first}, rest...) {
		if err := waitDone(t, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{1}, {2, 3, 4, 5}}; !slices.EqualFunc(r.batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", r.batches, want)
	}
}

// A failed upload fails its batch and every later commit, and Close
// reports it.
func TestPipelineFailureFailsLaterCommits(t *testing.T) {
	r := &recorder{fail: map[int]bool{2: true}}
	p := NewPipeline(PipelineOptions[int]{Upload: r.upload, Closed: errClosed})
	if err := waitDone(t, p.Append(item(1))); err != nil {
		t.Fatal(err)
	}
	if err := waitDone(t, p.Append(item(2))); err == nil {
		t.Fatal("a failed upload was acknowledged")
	}
	if err := waitDone(t, p.Append(item(3))); err == nil {
		t.Fatal("a commit after a failed one was acknowledged")
	}
	if err := p.Close(context.Background(), true); err == nil {
		t.Fatal("Close hid the failure")
	}
}

// A build error fails the pipeline without queuing anything.
func TestPipelineBuildErrorFails(t *testing.T) {
	r := &recorder{}
	p := NewPipeline(PipelineOptions[int]{Upload: r.upload, Closed: errClosed})
	boom := errors.New("cannot log this commit")
	if err := waitDone(t, p.Append(func() (int, error) { return 0, boom })); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if err := waitDone(t, p.Append(item(1))); !errors.Is(err, boom) {
		t.Fatalf("a later commit: %v, want the first failure", err)
	}
	p.Close(context.Background(), true)
	if len(r.batches) != 0 {
		t.Fatalf("uploaded %v after the pipeline failed", r.batches)
	}
}

// Closing without a final flush fails what is queued with Closed and
// stops retries; a final Close waits for the queue.
func TestPipelineClose(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	p := NewPipeline(PipelineOptions[int]{Upload: r.upload, Closed: errClosed})
	inflight := p.Append(item(1))
	<-r.entered // the first commit is being uploaded
	queued := p.Append(item(2))
	// The upload in flight finishes only once Close has abandoned the
	// pipeline: released earlier, the uploader could take the queued
	// commit into a second upload that nothing releases.
	go func() {
		for !p.Abandoned() {
			time.Sleep(time.Millisecond)
		}
		r.gate <- struct{}{}
	}()
	if err := p.Close(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if !p.Abandoned() {
		t.Fatal("not abandoned after a crash close")
	}
	if err := waitDone(t, queued); !errors.Is(err, errClosed) {
		t.Fatalf("queued commit: %v, want Closed", err)
	}
	if err := waitDone(t, inflight); err != nil {
		t.Fatalf("the upload in flight: %v", err)
	}
	if err := waitDone(t, p.Append(item(3))); !errors.Is(err, errClosed) {
		t.Fatalf("append after Close: %v", err)
	}

	r2 := &recorder{}
	p2 := NewPipeline(PipelineOptions[int]{Upload: r2.upload, Closed: errClosed})
	d := p2.Append(item(7))
	if err := p2.Close(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := waitDone(t, d); err != nil {
		t.Fatalf("a final Close did not flush: %v", err)
	}
}

// The group-commit rule as a pure function.
func TestNextGroup(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		what         string
		queued, prev int
		idle, last   time.Duration
		wantStart    bool
		wantWait     time.Duration
	}{
		{"the first upload", 1, 0, 0, 0, true, 0},
		{"a lone caller (previous group of one)", 1, 1, 0, 10 * ms, true, 0},
		{"as many queued as the previous group", 54, 54, 0, 4 * ms, true, 0},
		{"more queued than the previous group", 64, 54, 0, 4 * ms, true, 0},
		{"fewer, just freed: wait half the last upload", 10, 54, 0, 4 * ms, false, 2 * ms},
		{"fewer, part of the bound passed", 10, 54, ms, 4 * ms, false, ms},
		{"fewer, the bound passed", 10, 54, 2 * ms, 4 * ms, true, 0},
		{"fewer, an upload that took no time", 10, 54, 0, 0, true, 0},
	} {
		start, wait := nextGroup(tc.queued, tc.prev, tc.idle, tc.last)
		if start != tc.wantStart || wait != tc.wantWait {
			t.Errorf("%s: nextGroup(%d, %d, %v, %v) = %v, %v; want %v, %v", tc.what, tc.queued, tc.prev, tc.idle, tc.last, start, wait, tc.wantStart, tc.wantWait)
		}
	}
}

// After an upload of n commits the uploader waits (on the injected clock)
// until n are queued or half that upload's duration passed, so callers
// released together go up together; a lone caller is never held.
func TestPipelineWaitsForThePreviousGroupSize(t *testing.T) {
	clk := clock.NewFake(time.Unix(1e9, 0))
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 8)}
	p := NewPipeline(PipelineOptions[int]{Upload: r.upload, Closed: errClosed, Clock: clk})
	defer func() {
		close(r.gate) // whatever happened, uploads in flight go on
		p.Close(context.Background(), false)
	}()
	entered := func(what string) {
		t.Helper()
		select {
		case <-r.entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the upload never started", what)
		}
	}
	// upload lets the upload in flight take 10 ms of the fake clock and
	// waits until its commits are durable.
	upload := func(last Durable) {
		t.Helper()
		clk.Advance(10 * time.Millisecond)
		r.gate <- struct{}{}
		if err := waitDone(t, last); err != nil {
			t.Fatal(err)
		}
	}
	// holding waits until the uploader holds back a short queue (a timer
	// on the fake clock); an upload starting instead fails the test.
	holding := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); clk.Pending() == 0; {
			select {
			case <-r.entered:
				t.Fatalf("%s: an upload started with fewer commits than the previous one", what)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the uploader neither started nor waited", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	d1 := p.Append(item(1))
	entered("first")
	p.Append(item(2))
	p.Append(item(3))
	d4 := p.Append(item(4))
	upload(d1) // [1]
	entered("second")
	d5 := p.Append(item(5))
	upload(d4) // [2 3 4]
	holding("one commit after a group of three")
	p.Append(item(6))
	d7 := p.Append(item(7))
	entered("third")
	d8 := p.Append(item(8))
	upload(d7) // [5 6 7]
	holding("one commit after a group of three")
	clk.Advance(5 * time.Millisecond) // half of the last upload
	entered("after the bound")
	upload(d8) // [8]
	d9 := p.Append(item(9))
	entered("a lone caller") // no clock advance: not held
	upload(d9)               // [9]
	if err := waitDone(t, d5); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	want := [][]int{{1}, {2, 3, 4}, {5, 6, 7}, {8}, {9}}
	if !slices.EqualFunc(r.batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", r.batches, want)
	}
}

// With Credit, the uploader goes on while a stored batch waits for its
// credit; batches resolve in order, and a failed credit fails its batch
// and every later one, even one whose own credit succeeded.
func TestPipelineCreditsInOrder(t *testing.T) {
	var mu sync.Mutex
	var uploads int
	credits := map[int]*Future{}
	p := NewPipeline(PipelineOptions[int]{
		Upload: func(batch []int) error {
			mu.Lock()
			uploads++
			mu.Unlock()
			return nil
		},
		Credit: func(batch []int) Durable {
			f := NewFuture()
			mu.Lock()
			credits[batch[0]] = f
			mu.Unlock()
			return f
		},
		Closed: errors.New("closed"),
	})
	a := p.Append(func() (int, error) { return 1, nil })
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return credits[1] != nil })
	b := p.Append(func() (int, error) { return 2, nil })
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return credits[2] != nil })
	c := p.Append(func() (int, error) { return 3, nil })
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return credits[3] != nil })
	mu.Lock()
	if uploads != 3 {
		t.Fatalf("%d uploads while the first batch waited for its credit, want 3", uploads)
	}
	cr := credits
	mu.Unlock()
	cr[2].Resolve(nil) // credited before the first: must wait for it
	select {
	case <-b.Done():
		t.Fatal("the second batch resolved before the first")
	case <-time.After(20 * time.Millisecond):
	}
	boom := errors.New("credit refused")
	cr[1].Resolve(boom)
	cr[3].Resolve(nil)
	for i, d := range []Durable{a, b, c} {
		<-d.Done()
		if !errors.Is(d.Err(), boom) {
			t.Fatalf("batch %d: %v, want the first batch's failed credit", i+1, d.Err())
		}
	}
	if err := p.Close(context.Background(), true); !errors.Is(err, boom) {
		t.Fatalf("Close: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
	}
}
