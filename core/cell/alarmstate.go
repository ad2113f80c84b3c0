package cell

// alarmState is what an instance knows of its alarm beyond the _cf_ALARM
// row: whether the turn changed the row (so that, once the turn commits,
// the scheduler and the wake index learn it), which alarm's handler is
// running, and whether the constructor set an alarm before the object
// existed. It exists so these flags have one owner and named transitions.
// The instance's mu guards it.
type alarmState struct {
	// changed: the turn wrote _cf_ALARM, or must read it back whatever it
	// did (an alarm run, an activation): reschedule after the commit.
	changed bool
	// firing is the alarm whose handler is running (nil: none).
	firing *alarmRow
	// setBeforeObject: the constructor called SetAlarm before the object
	// existed (a class registered with an interface type), which activate
	// checks once it does.
	setBeforeObject bool
}

// markChanged asks for the alarm to be read back and rescheduled once the
// turn commits.
func (a *alarmState) markChanged() { a.changed = true }

// takeChanged reports whether the turn asked for a reschedule, and clears
// it: the commit's one chance to act on it.
func (a *alarmState) takeChanged() bool {
	changed := a.changed
	a.changed = false
	return changed
}

// discard forgets a change the turn rolled back.
func (a *alarmState) discard() { a.changed = false }

// fire and fired bracket a run of the handler for row.
func (a *alarmState) fire(row *alarmRow) { a.firing = row }
func (a *alarmState) fired()             { a.firing = nil }

// visible is the stored row as GetAlarm reports it: none, while the
// handler of that very alarm runs (unless something set a new one).
func (a *alarmState) visible(row *alarmRow) *alarmRow {
	if row == nil || sameAlarm(row, a.firing) {
		return nil
	}
	return row
}
