package faultstore

import "time"

// OpStats counts the calls of one operation.
type OpStats struct {
	// Calls is every call made to the wrapper, faulty or not.
	Calls int64
	// Failed, Dropped, Lost and Stale count the injected faults.
	Failed, Dropped, Lost, Stale int64
	// Delay is the latency added in all.
	Delay time.Duration
}

// Reached is the number of calls that reached the wrapped store.
func (o OpStats) Reached() int64 { return o.Calls - o.Failed - o.Dropped }

// Stats counts calls per operation.
type Stats struct {
	Get, Put, Delete, List OpStats
}

// Calls is the number of calls of every operation.
func (s Stats) Calls() int64 { return s.Get.Calls + s.Put.Calls + s.Delete.Calls + s.List.Calls }

// Faults is the number of injected faults of every kind.
func (s Stats) Faults() int64 {
	var n int64
	for _, o := range []OpStats{s.Get, s.Put, s.Delete, s.List} {
		n += o.Failed + o.Dropped + o.Lost + o.Stale
	}
	return n
}

func (s *Stats) of(op Op) *OpStats {
	switch op {
	case OpGet:
		return &s.Get
	case OpPut:
		return &s.Put
	case OpDelete:
		return &s.Delete
	default:
		return &s.List
	}
}

// Stats returns the counts so far.
func (s *Store) Stats() Stats {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.f.stats
}

// ResetStats sets every count back to zero.
func (s *Store) ResetStats() {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.stats = Stats{}
}
