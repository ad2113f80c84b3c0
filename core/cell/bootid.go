package cell

import (
	"errors"
	"log/slog"
	"strings"
)

// errNoBootID: the operating system names no boot here.
var errNoBootID = errors.New("cell: this system names no boot")

// readBootID is the boot identity a single-host cell's restart mark
// records, from bootID or, without one, the operating system's; "" when
// there is none, which keeps the local file synced per group commit.
func readBootID(bootID func() (string, error), log *slog.Logger) string {
	if bootID == nil {
		bootID = systemBootID
	}
	id, err := bootID()
	id = strings.TrimSpace(id)
	if err == nil && id == "" {
		err = errors.New("empty boot id")
	}
	if err != nil {
		if !errors.Is(err, errNoBootID) {
			log.Warn("cell: no boot identity; single-host cells sync their local file once per group commit", "err", err)
		}
		return ""
	}
	return id
}
