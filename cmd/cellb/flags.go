package main

import (
	"flag"
	"io"
)

// parseFlags parses args with fs, accepting flags before, between and after
// the positional arguments, as people type them ("cellb restore URL KEY
// out.db --txid 5"). A bare "--" ends flag parsing. It returns the
// positional arguments in order.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	fs.SetOutput(io.Discard)
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// fs.Parse stops at the first non-flag; an explicit "--" before it
		// means everything after is positional.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
		if len(args) > 0 && args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
	}
}
