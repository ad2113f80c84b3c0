package httperr

import "net/http"

// Retry-After values, in seconds: a full disk needs an operator, so
// clients wait longer; anything else answered 503 (activation, a closing
// runtime, a lapsed lease) is usually over within a second or two.
const (
	RetryAfterDiskFull = 30
	RetryAfterDefault  = 1
)

// RetryAfter is the Retry-After header's value, in seconds, for a call that
// failed with err: 0 unless Status answers it 503.
func RetryAfter(err error) int {
	if status, _ := Status(err); status != http.StatusServiceUnavailable {
		return 0
	}
	if IsDiskFull(err) {
		return RetryAfterDiskFull
	}
	return RetryAfterDefault
}
