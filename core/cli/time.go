package cli

import (
	"strconv"
	"time"
)

// ParseTime parses a time given on a command line: RFC 3339 (with or
// without fractional seconds, e.g. 2026-05-30T02:46:41Z) or Unix
// milliseconds (1780109201000).
func ParseTime(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
