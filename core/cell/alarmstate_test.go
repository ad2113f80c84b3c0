package cell

import "testing"

// The alarm's flags: a change asked for is acted on by exactly one
// commit, a rollback forgets it, and while an alarm's handler runs that
// alarm reads as not set, but a new one does.
func TestAlarmState(t *testing.T) {
	var a alarmState
	if a.takeChanged() {
		t.Fatal("a fresh instance reports a change")
	}
	a.markChanged()
	if !a.takeChanged() || a.takeChanged() {
		t.Fatal("a change must be taken exactly once")
	}
	a.markChanged()
	a.discard()
	if a.takeChanged() {
		t.Fatal("a rolled-back change was kept")
	}

	row := &alarmRow{AtMs: 10, Generation: 1}
	rearmed := &alarmRow{AtMs: 10, Generation: 2}
	if a.visible(row) != row || a.visible(nil) != nil {
		t.Fatal("with no handler running, the stored row is the alarm")
	}
	a.fire(row)
	if got := a.visible(&alarmRow{AtMs: 10, Generation: 1}); got != nil {
		t.Fatalf("the firing alarm reads as set: %+v", got)
	}
	if a.visible(rearmed) != rearmed {
		t.Fatal("an alarm set by the handler reads as not set")
	}
	a.fired()
	if a.visible(row) != row {
		t.Fatal("the alarm reads as not set after its handler returned")
	}
}
