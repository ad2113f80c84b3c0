package faultstore

import "time"

// Fault is a scripted fault kind.
type Fault int

const (
	// NoFault injects nothing; a Rule with only a Delay uses it.
	NoFault Fault = iota
	// Fail fails the call before it reaches the store (Rule.Err, or
	// ErrInjected).
	Fail
	// Drop loses a write before it reaches the store: nothing applies and
	// the caller gets an ambiguous error.
	Drop
	// LoseResponse applies a write and then gives the caller an ambiguous
	// error.
	LoseResponse
	// StaleList makes a List show the view before the recent writes.
	StaleList
)

// Rule scripts a fault for the calls it matches. Rules are checked in the
// order they were added; the first match with calls left wins and replaces
// the random faults for that call.
type Rule struct {
	// Op restricts the rule to one operation; empty matches every one.
	Op Op
	// Key restricts the rule to one key (the prefix, for List); empty
	// matches every key.
	Key string
	// Fault is what happens to a matching call.
	Fault Fault
	// Times is how many matching calls the rule affects: 0 means once, a
	// negative number means every matching call from now on.
	Times int
	// Err replaces ErrInjected for Fail. Use store.ErrAmbiguous to make a
	// failure that applied nothing look ambiguous.
	Err error
	// Delay is added to the call's latency.
	Delay time.Duration
	// AfterBytes, with Fail and when > 0, moves the failure of a call into
	// its body: a put hands the wrapped store a body that fails after
	// AfterBytes bytes (a reader dying mid-upload), and a get returns a
	// stream that fails after AfterBytes bytes (a connection dying
	// mid-download). Whole-object Gets and Puts are streamed to the
	// wrapped driver too, so they fail the same way (with Err).
	AfterBytes int64
}

// Script adds rules.
func (s *Store) Script(rules ...Rule) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range rules {
		if r.Times == 0 {
			r.Times = 1
		}
		f.rules = append(f.rules, &r)
	}
}

// FailNext fails the next call of op on key ("" for any key).
func (s *Store) FailNext(op Op, key string) { s.Script(Rule{Op: op, Key: key, Fault: Fail}) }

// LoseNext applies the next write of op on key and loses its response.
func (s *Store) LoseNext(op Op, key string) { s.Script(Rule{Op: op, Key: key, Fault: LoseResponse}) }

// DropNext loses the next write of op on key before it reaches the store.
func (s *Store) DropNext(op Op, key string) { s.Script(Rule{Op: op, Key: key, Fault: Drop}) }

// ClearScript removes every rule, used up or not.
func (s *Store) ClearScript() {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.rules = nil
}

// Pending is the number of scripted rules with calls left.
func (s *Store) Pending() int {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return len(s.f.rules)
}

// matchRule finds and uses up the first matching rule. Caller holds s.mu.
func (s *faults) matchRule(op Op, key string) *Rule {
	for i, r := range s.rules {
		if (r.Op != "" && r.Op != op) || (r.Key != "" && r.Key != key) {
			continue
		}
		if r.Times > 0 {
			r.Times--
			if r.Times == 0 {
				s.rules = append(s.rules[:i:i], s.rules[i+1:]...)
			}
		}
		return r
	}
	return nil
}
