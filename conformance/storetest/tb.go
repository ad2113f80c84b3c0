package storetest

import (
	"fmt"
	"runtime"
	"sync"
)

// tb is the part of testing.TB the cases use, so the same cases run under
// go test (with *testing.T) and without it (RunReport's recorder).
//
// Cases call Fatalf only from the goroutine that runs the case; helper
// goroutines use Errorf.
type tb interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Failed() bool
}

// recorder is the tb of RunReport. Fatalf ends the case's goroutine, as
// testing.T's does.
type recorder struct {
	mu       sync.Mutex
	failures []string
	logs     []string
}

func (*recorder) Helper() {}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

func (r *recorder) snapshot() (failures, logs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.failures...), append([]string(nil), r.logs...)
}
