package tests

import (
	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
)

// durabilityModes is every durability mode, the default first, as `cellb
// serve --durability` and `cellb restore --from` offer them
// (cmd/cellb/app/modes.go).
func durabilityModes() durability.Modes {
	return durability.Modes{ltxlog.Mode(), changeset.Mode(), backup.Mode()}
}
