package cell

import (
	"testing"
	"time"
)

func TestAlarmRetryDelay(t *testing.T) {
	for retry, want := range map[int64]time.Duration{
		-1: 2 * time.Second, 0: 2 * time.Second, 1: 4 * time.Second, 2: 8 * time.Second,
		3: 16 * time.Second, 4: 32 * time.Second, 5: 64 * time.Second, 6: 128 * time.Second,
		7: 128 * time.Second, 100: 128 * time.Second,
	} {
		if got := alarmRetryDelay(retry); got != want {
			t.Errorf("alarmRetryDelay(%d) = %v, want %v", retry, got, want)
		}
	}
}

func TestAlarmAfterSuccess(t *testing.T) {
	fired := &alarmRow{AtMs: 1000, Generation: 7}
	tests := []struct {
		name    string
		current *alarmRow
		want    bool
	}{
		{"row unchanged", &alarmRow{AtMs: 1000, Generation: 7, Retry: 2}, true},
		{"row deleted by the handler", nil, false},
		{"re-armed for later", &alarmRow{AtMs: 5000, Generation: 8}, false},
		{"re-armed for the same time", &alarmRow{AtMs: 1000, Generation: 8}, false},
	}
	for _, tt := range tests {
		if got := alarmAfterSuccess(fired, tt.current); got != tt.want {
			t.Errorf("%s: delete = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAlarmAfterFailure(t *testing.T) {
	const now = 100_000
	tests := []struct {
		name         string
		fired, cur   *alarmRow
		counted      bool
		next         alarmRow
		update, drop bool
	}{
		{"first failure", &alarmRow{AtMs: 1, Generation: 3}, &alarmRow{AtMs: 1, Generation: 3},
			true, alarmRow{AtMs: now + 2000, Retry: 1, Counted: 1, Generation: 3}, true, false},
		{"third failure", &alarmRow{AtMs: 1, Generation: 3, Retry: 2, Counted: 2}, &alarmRow{AtMs: 1, Generation: 3, Retry: 2, Counted: 2},
			true, alarmRow{AtMs: now + 8000, Retry: 3, Counted: 3, Generation: 3}, true, false},
		{"backoff capped", &alarmRow{AtMs: 1, Generation: 3, Retry: 9, Counted: 4}, &alarmRow{AtMs: 1, Generation: 3, Retry: 9, Counted: 4},
			true, alarmRow{AtMs: now + 128000, Retry: 10, Counted: 5, Generation: 3}, true, false},
		{"sixth counted failure drops", &alarmRow{AtMs: 1, Generation: 3, Retry: 5, Counted: 5}, &alarmRow{AtMs: 1, Generation: 3, Retry: 5, Counted: 5},
			true, alarmRow{}, false, true},
		{"uncounted failure never drops", &alarmRow{AtMs: 1, Generation: 3, Retry: 5, Counted: 5}, &alarmRow{AtMs: 1, Generation: 3, Retry: 5, Counted: 5},
			false, alarmRow{AtMs: now + 64000, Retry: 6, Counted: 5, Generation: 3}, true, false},
		{"re-arm wins", &alarmRow{AtMs: 1, Generation: 3}, &alarmRow{AtMs: 9, Generation: 4},
			true, alarmRow{}, false, false},
		{"deleted by the handler", &alarmRow{AtMs: 1, Generation: 3}, nil,
			true, alarmRow{}, false, false},
	}
	for _, tt := range tests {
		next, update, drop := alarmAfterFailure(tt.fired, tt.cur, now, tt.counted)
		if next != tt.next || update != tt.update || drop != tt.drop {
			t.Errorf("%s: got (%+v, update %v, drop %v), want (%+v, %v, %v)", tt.name, next, update, drop, tt.next, tt.update, tt.drop)
		}
	}
}
