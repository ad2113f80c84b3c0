// Command cellb runs and inspects CellB nodes and buckets (package app has
// the commands; docs/cli.md). This file is all a main needs: a store
// author's cellb is this one with their adapter's Register in Buckets
// (docs/adapters.md, "cellb with your adapter").
package main

import (
	"os"

	"github.com/cellb/cellb/cmd/cellb/app"
)

func main() { os.Exit(app.Main(app.Options{})) }
