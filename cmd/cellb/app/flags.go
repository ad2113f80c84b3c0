package app

import "github.com/cellb/cellb/core/cli"

// newCmdLine is a cellb command's command line: every command keeps the
// conventions of core/cli (docs/cli.md, "Conventions"), which the table
// test in cli_test.go checks for each entry of program().
func newCmdLine(name, synopsis, about string, minArgs, maxArgs int, argsWant string) *cli.Command {
	return cli.New("cellb", name, synopsis, about, minArgs, maxArgs, argsWant)
}
