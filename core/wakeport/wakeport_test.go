package wakeport

import (
	"errors"
	"testing"
)

func TestPublishErrorNamesThePublication(t *testing.T) {
	at := int64(5)
	cause := errors.New("put refused")
	err := error(&PublishError{Publication: Publication{Cell: "C:x", Epoch: 3, Seq: 9, AtMs: &at}, Err: cause})
	const want = "the wake publication 0000000000000003-0000000000000009 of C:x failed: put refused"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
	if !errors.Is(err, cause) {
		t.Error("a *PublishError does not unwrap to its cause")
	}
}
