package main

import (
	"flag"
	"fmt"
	"io"
)

// newFlagSet returns a flag set that prints its usage, headed by about, to
// out and reports errors instead of exiting.
func newFlagSet(name, about string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: ticketbridge %s [flags]\n\n%s\n", name, about)
		var n int
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(out, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// errHelp is returned by parseFlags after --help printed the usage; the
// command then returns nil.
var errHelp = flag.ErrHelp

// parseFlags parses args; --help prints usage and yields errHelp wrapped in
// an exitError of code 0, and a bad flag an errUsage. Flags may come after
// positional arguments (status ID --json); everything after "--" is
// positional. fs.Args() then holds the positional arguments in order.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == errHelp {
				return &exitError{code: 0}
			}
			return fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}
