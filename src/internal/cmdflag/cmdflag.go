// Package cmdflag holds what a subcommand's flag set needs beyond the
// flag package, and knows nothing of cellguard: the --flag spelling in
// help and errors, one error line and one hint for a bad flag, flags
// after positionals, and a repeatable string flag.
package cmdflag

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// Outcome is how a parse ended.
type Outcome int

const (
	// Parsed: go on.
	Parsed Outcome = iota
	// Help: --help was asked for and printed; stop, successfully.
	Help
	// Bad: a flag could not be read; its error and a hint are printed.
	Bad
)

// PrintFlags is flag.PrintDefaults with the --flag spelling the docs use
// (the flag package accepts both; it prints one dash).
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		fmt.Fprintf(w, "%s\n    \t%s", line, usage)
		if !zeroDefault[f.DefValue] {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// zeroDefault are the defaults flag.PrintDefaults leaves unsaid.
var zeroDefault = map[string]bool{"": true, "false": true, "0": true, "0s": true, "[]": true}

// dashDash spells the flag package's "-flag" in its errors as the docs do.
var dashDash = strings.NewReplacer("defined: -", "defined: --", "for flag -", "for flag --", "flag needs an argument: -", "flag needs an argument: --")

// Parse parses args. A bad flag is one error line and one hint on the
// flag set's output, never the whole flag list; prog names the program
// in both.
func Parse(prog string, fs *flag.FlagSet, args []string) Outcome {
	help := fs.Usage
	fs.Usage = func() {}
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = help
	fs.SetOutput(out)
	switch {
	case err == flag.ErrHelp:
		help()
		return Help
	case err != nil:
		fmt.Fprintf(out, "%s: error: %s: %s\n", prog, fs.Name(), dashDash.Replace(err.Error()))
		fmt.Fprintf(out, "%s: hint: run '%s %s --help' for its flags\n", prog, prog, fs.Name())
		return Bad
	}
	return Parsed
}

// ParseInterspersed is Parse that lets flags follow positionals
// ("cellguard start garden --json").
func ParseInterspersed(prog string, fs *flag.FlagSet, args []string) Outcome {
	var pos []string
	for {
		if o := Parse(prog, fs, args); o != Parsed {
			return o
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	_ = fs.Parse(pos) // re-seat positionals; they hold no flags
	return Parsed
}

// Value is the value args give the flag name, read without a flag set
// (one that stopped at a flag it could not read), and whether they give it.
func Value(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		n, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || n != name {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		return value, true
	}
	return "", false
}

// List is a repeatable string flag.
type List []string

func (s *List) String() string     { return strings.Join(*s, ",") }
func (s *List) Set(v string) error { *s = append(*s, v); return nil }
