package app

import "github.com/cellb/cellb/core/cli"

// versionCommand prints the versions of cellb's module and of the CellB
// modules built into it (core/cli's version command).
func versionCommand() cli.Entry { return cli.VersionEntry("cellb", "github.com/cellb/cellb", "CellB") }
