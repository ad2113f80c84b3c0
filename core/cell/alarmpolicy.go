package cell

import "time"

// Alarm retry policy, as celld applies it: a failed alarm runs again after
// 2 s << min(retry, 6) (2 s, 4 s, ... capped at 128 s), and is dropped once
// it has failed 6 counted times.
const (
	alarmRetryBase      = 2 * time.Second
	alarmMaxBackoffStep = 6
	alarmMaxCounted     = 6
)

// alarmRow is a cell's _cf_ALARM row.
type alarmRow struct {
	AtMs       int64 // due time, Unix milliseconds
	Retry      int64 // failures so far (counted or not)
	Counted    int64 // failures that count towards dropping the alarm
	Generation int64 // random tag drawn by every SetAlarm
}

// alarmRetryDelay is how long after a failure the alarm runs again.
func alarmRetryDelay(retry int64) time.Duration {
	if retry < 0 {
		retry = 0
	}
	return alarmRetryBase << min(retry, alarmMaxBackoffStep)
}

// sameAlarm reports whether two rows are the same installation of an
// alarm: a SetAlarm in between draws a new generation (and usually time).
func sameAlarm(a, b *alarmRow) bool {
	return a != nil && b != nil && a.AtMs == b.AtMs && a.Generation == b.Generation
}

// alarmAfterSuccess decides what a successful run leaves: the fired row
// is deleted unless the handler (or a concurrent event) installed another.
func alarmAfterSuccess(fired, current *alarmRow) (deleteRow bool) {
	return sameAlarm(fired, current)
}

// alarmAfterFailure decides what a failed run leaves. If the row is no
// longer the fired alarm it is left alone (a re-arm wins); otherwise it is
// rescheduled at now + alarmRetryDelay(retry) with the counters raised, or
// dropped once the counted failures reach the limit.
func alarmAfterFailure(fired, current *alarmRow, nowMs int64, counted bool) (next alarmRow, update, drop bool) {
	if !sameAlarm(fired, current) {
		return alarmRow{}, false, false
	}
	next = *current
	next.AtMs = nowMs + alarmRetryDelay(current.Retry).Milliseconds()
	next.Retry = current.Retry + 1
	if counted {
		next.Counted = current.Counted + 1
	}
	if next.Counted >= alarmMaxCounted {
		return alarmRow{}, false, true
	}
	return next, true, false
}
