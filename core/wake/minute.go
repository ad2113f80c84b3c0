package wake

import (
	"fmt"
	"strconv"
	"time"
)

// minuteLen is len("YYYY-MM-DDTHH:MM").
const minuteLen = 16

// msPerMinute is the width of one wake bucket.
const msPerMinute = 60_000

// Minute is the wake bucket of a due time: floor(dueMs / 60000) rendered
// in UTC as "YYYY-MM-DDTHH:MM", so that the buckets sort lexicographically
// in time order and the waker can LIST the due ones. Times before 1970 use
// floor division too, as celld does (a year below 0 renders as "-001").
func Minute(dueMs int64) string {
	floor := dueMs / msPerMinute
	if dueMs%msPerMinute < 0 {
		floor--
	}
	t := time.Unix(floor*60, 0).UTC()
	return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d", t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute())
}

// parseMinute returns the first millisecond of a "YYYY-MM-DDTHH:MM" bucket.
// Like celld, it accepts only text that Minute renders back identically, so
// there is exactly one spelling per bucket (no "+1", no February 30th).
func parseMinute(s string) (int64, bool) {
	if len(s) != minuteLen || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' {
		return 0, false
	}
	year, err := strconv.ParseInt(s[0:4], 10, 64)
	if err != nil {
		return 0, false
	}
	month, ok1 := twoDigits(s[5:7], 1, 12)
	day, ok2 := twoDigits(s[8:10], 1, 31)
	hour, ok3 := twoDigits(s[11:13], 0, 23)
	minute, ok4 := twoDigits(s[14:16], 0, 59)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0, false
	}
	t := time.Date(int(year), time.Month(month), day, hour, minute, 0, 0, time.UTC)
	ms := t.Unix() * 1000
	if Minute(ms) != s {
		return 0, false
	}
	return ms, true
}

func twoDigits(s string, lo, hi int) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	v := int(s[0]-'0')*10 + int(s[1]-'0')
	return v, v >= lo && v <= hi
}
