package wake

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestMinute(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want string
	}{
		{0, "1970-01-01T00:00"},
		{59_999, "1970-01-01T00:00"},
		{60_000, "1970-01-01T00:01"},
		{-1, "1969-12-31T23:59"},
		{-60_000, "1969-12-31T23:59"},
		{-60_001, "1969-12-31T23:58"},
		{1_700_000_000_000, "2023-11-14T22:13"},
		{1_709_210_070_000, "2024-02-29T12:34"},
		{1_780_109_211_091, "2026-05-30T02:46"},
		{253_402_300_799_999, "9999-12-31T23:59"},
		{253_402_300_800_000, "10000-01-01T00:00"},
		// Year 0 and year -1 exist (astronomical numbering, as in celld's
		// civil-from-days).
		{-62_167_219_200_000, "0000-01-01T00:00"},
		{-62_167_219_200_001, "-001-12-31T23:59"},
	} {
		if got := Minute(tc.ms); got != tc.want {
			t.Errorf("Minute(%d) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}

// civilMinute renders a minute with Howard Hinnant's civil-from-days
// algorithm, the one celld uses, to cross-check Minute's use of package time.
func civilMinute(ms int64) string {
	floorDiv := func(a, b int64) int64 {
		q := a / b
		if a%b != 0 && (a < 0) != (b < 0) {
			q--
		}
		return q
	}
	mins := floorDiv(ms, 60_000)
	days := floorDiv(mins, 1440)
	m := mins - days*1440
	z := days + 719_468
	era := floorDiv(z, 146_097)
	doe := z - era*146_097
	yoe := (doe - doe/1460 + doe/36_524 - doe/146_096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	mo := mp + 3
	if mp >= 10 {
		mo = mp - 9
	}
	y := yoe + era*400
	if mo <= 2 {
		y++
	}
	return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d", y, mo, d, m/60, m%60)
}

func TestMinuteExtremes(t *testing.T) {
	for _, v := range []int64{math.MinInt64, math.MaxInt64} {
		s := Minute(v)
		if s != civilMinute(v) {
			t.Errorf("Minute(%d) = %q, civil-from-days says %q", v, s, civilMinute(v))
		}
		if _, ok := parseMinute(s); ok {
			t.Errorf("parseMinute(%q) accepted a minute outside four-digit years", s)
		}
	}
}

func TestMinuteMatchesCivilFromDays(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const span = int64(400 * 366 * 24 * 3600 * 1000) // four centuries either side
	for i := 0; i < 20000; i++ {
		ms := r.Int64N(2*span) - span
		if got, want := Minute(ms), civilMinute(ms); got != want {
			t.Fatalf("Minute(%d) = %q, civil-from-days says %q", ms, got, want)
		}
		start, ok := parseMinute(Minute(ms))
		if !ok || start > ms || ms-start >= 60_000 || start%60_000 != 0 {
			t.Fatalf("parseMinute(Minute(%d)) = %d, %v", ms, start, ok)
		}
	}
}

func TestParseMinute(t *testing.T) {
	for s, want := range map[string]int64{
		"1970-01-01T00:00": 0,
		"1970-01-01T00:01": 60_000,
		"1969-12-31T23:59": -60_000,
		"2024-02-29T12:34": 1_709_210_040_000,
		"0000-01-01T00:00": -62_167_219_200_000,
		"-001-12-31T23:59": -62_167_219_260_000, // celld's parser reads a signed year
	} {
		got, ok := parseMinute(s)
		if !ok || got != want {
			t.Errorf("parseMinute(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{
		"",
		"1970-01-01T00:0",
		"1970-01-01T00:000",
		"1970-01-01 00:00",
		"1970/01/01T00:00",
		"1970-01-01T00-00",
		"1970-13-01T00:00",
		"1970-00-01T00:00",
		"1970-01-00T00:00",
		"1970-01-32T00:00",
		"1970-02-29T00:00", // not a leap year
		"2023-04-31T00:00",
		"1970-01-01T24:00",
		"1970-01-01T00:60",
		"+970-01-01T00:00", // sign: not how the minute renders
		"-000-01-01T00:00",
		"1970-+1-01T00:00",
		"1970-01-01T0a:00",
		"197O-01-01T00:00",
		"10000-01-01T00:0",
	} {
		if ms, ok := parseMinute(s); ok {
			t.Errorf("parseMinute(%q) accepted (%d)", s, ms)
		}
	}
}
