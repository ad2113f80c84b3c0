package app

import (
	"strings"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
)

// durabilityModes is every durability mode the CLI offers, the default
// first: serve --durability opens one, restore --from reads one, and both
// usage texts list them from here.
func durabilityModes() durability.Modes {
	return durability.Modes{ltxlog.Mode(), changeset.Mode(), backup.Mode()}
}

// modeChoices spells the modes for a usage line: "ltx|changeset|backup".
func modeChoices(ms durability.Modes) string { return strings.Join(ms.Names(), "|") }
