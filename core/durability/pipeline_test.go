package durability

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
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
