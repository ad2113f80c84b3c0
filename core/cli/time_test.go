package cli

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	want := time.Date(2026, 5, 30, 2, 46, 41, 0, time.UTC)
	for _, s := range []string{"2026-05-30T02:46:41Z", "2026-05-30T04:46:41+02:00", "1780109201000", "2026-05-30T02:46:41.000Z"} {
		if got, err := ParseTime(s); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "yesterday", "2026-05-30", "12.5"} {
		if _, err := ParseTime(s); err == nil {
			t.Errorf("ParseTime(%q) took it", s)
		}
	}
}
