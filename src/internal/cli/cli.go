// Package cli holds cellguard's subcommands: flags -> a use case in
// package app -> output and exit code. It imports only app, config and
// cmdflag; each subcommand is one file here, one line in Commands and,
// for its --help prose, one file in help/.
//
// Output rules: results a caller may parse (tables, --json, drain's integer)
// go to Stdout; logs (lager JSON) go to Stderr or --log-file, never to Stdout.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/cmdflag"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

// defaultConfigPath is where the BOSH job renders the config.
const defaultConfigPath = app.DefaultConfigPath

// Exit codes, documented in README.md ("Exit codes").
const (
	ExitOK      = 0 // success; validate: passed (warnings allowed)
	ExitFailed  = 1 // the operation failed or a blocking check failed
	ExitCantRun = 2 // bad usage or input, or cellguard itself could not run
)

// Env is what a subcommand may touch of the outside world; tests swap it.
type Env struct {
	// Stdin is read by fleet-summary; nil means os.Stdin.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Now is the clock (a drain lift's expiry); nil means time.Now.
	Now func() time.Time
}

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Command is one subcommand (or a group of them, via Sub).
type Command struct {
	Name    string
	Summary string
	// Run parses args (without the command name) and returns an exit code.
	Run func(ctx context.Context, env *Env, args []string) int
	// Sub, when set, makes this a group: "cellguard unit install ...".
	Sub []*Command
}

// Commands is the one list of cellguard's subcommands.
func Commands() []*Command {
	return []*Command{
		unitCommand(),
		startCommand(),
		stopCommand(),
		sysctlCommand(),
		validateCommand(),
		watchCommand(),
		advisoriesCommand(),
		drainCommand(),
		uninstallCommand(),
		versionCommand(),
		configCommand(),
		fleetSummaryCommand(),
	}
}

// Main runs cellguard with args (os.Args[1:]) and returns the exit code.
func Main(ctx context.Context, env *Env, args []string) int {
	return dispatch(ctx, env, "cellguard", Commands(), args)
}

func dispatch(ctx context.Context, env *Env, prog string, cmds []*Command, args []string) int {
	switch {
	case len(args) == 0:
		// No command is bad usage: the list goes where errors go.
		usage(env.Stderr, prog, cmds)
		return ExitCantRun
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		// Asked for: stdout, so `cellguard --help | less` shows it.
		usage(env.Stdout, prog, cmds)
		return ExitOK
	case args[0] == "--version" && prog == "cellguard":
		fmt.Fprintln(env.Stdout, Version)
		return ExitOK
	}
	for _, c := range cmds {
		if c.Name != args[0] {
			continue
		}
		if c.Sub != nil {
			return dispatch(ctx, env, prog+" "+c.Name, c.Sub, args[1:])
		}
		return c.Run(ctx, env, args[1:])
	}
	fmt.Fprintf(env.Stderr, "cellguard: error: unknown command %q\n", strings.TrimSpace(strings.TrimPrefix(prog+" "+args[0], "cellguard ")))
	fmt.Fprintf(env.Stderr, "cellguard: hint: run '%s --help' for the commands\n", prog)
	return ExitCantRun
}

func usage(w io.Writer, prog string, cmds []*Command) {
	fmt.Fprintf(w, "usage: %s COMMAND [flags]\n\ncommands:\n", prog)
	sorted := append([]*Command(nil), cmds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-20s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags.\n"+
		"Exit codes: 0 ok, 1 failed (or a blocking check failed), 2 bad usage or could not run.\n", prog)
}

// common holds the flags every subcommand takes.
type common struct {
	logFile    string
	timeFormat string
	logLevel   string
	configPath string
	// logsOnStderr: no log file, so the log shares stderr with the
	// "cellguard: error:" lines (set by setup and flagLogger).
	logsOnStderr bool
}

// newFlagSet returns a flag set for "cellguard <name>" with the common flags
// registered. Asked-for help goes to stdout; the flag package's own error
// line goes to stderr, and parse adds one hint instead of the whole list.
func newFlagSet(env *Env, name, synopsis string, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.StringVar(&c.logFile, "log-file", "", "append logs to this file instead of stderr")
	fs.StringVar(&c.timeFormat, "log-time-format", "unix-epoch", "log timestamps: unix-epoch or rfc3339 (as Garden's --time-format)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, error or fatal")
	fs.StringVar(&c.configPath, "config", "", "cellguard config file (JSON rendered by the BOSH job); default "+defaultConfigPath+" when it exists")
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "usage: cellguard %s\n\nflags:\n", synopsis)
		cmdflag.PrintFlags(env.Stdout, fs)
	}
	return fs
}

// withHelp appends help to the flag set's usage (--help).
func withHelp(env *Env, fs *flag.FlagSet, help string) {
	base := fs.Usage
	fs.Usage = func() {
		base()
		fmt.Fprint(env.Stdout, help)
	}
}

// parseNoArgs is parse for a command that takes flags only.
func parseNoArgs(env *Env, fs *flag.FlagSet, args []string) (bool, int) {
	if ok, code := parse(fs, args); !ok {
		return false, code
	}
	if fs.NArg() != 0 {
		errorf(env, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
		return false, ExitCantRun
	}
	return true, ExitOK
}

// parse parses args; it returns ok=false and the exit code to use when the
// command should stop (bad flags, or --help).
func parse(fs *flag.FlagSet, args []string) (bool, int) {
	return outcome(cmdflag.Parse("cellguard", fs, args))
}

// parseInterspersed lets flags follow the NAME ("cellguard start garden --json").
func parseInterspersed(fs *flag.FlagSet, args []string) (bool, int) {
	return outcome(cmdflag.ParseInterspersed("cellguard", fs, args))
}

func outcome(o cmdflag.Outcome) (bool, int) {
	switch o {
	case cmdflag.Help:
		return false, ExitOK
	case cmdflag.Bad:
		return false, ExitCantRun
	}
	return true, ExitOK
}

// setup loads the config and builds the lager logger for a command. The
// config is optional unless --config names a file.
func (c *common) setup(env *Env, source string) (lager.Logger, *config.Config, func(), error) {
	cfg, err := loadConfig(c.configPath)
	if err != nil {
		return nil, nil, nil, err
	}
	logger, closer, onStderr, err := app.Logger(c.logFlags(), cfg, env.Stderr, source)
	if err != nil {
		return nil, nil, nil, err
	}
	c.logsOnStderr = onStderr
	return logger, cfg, closer, nil
}

// flagLogger is app.FlagLogger: the logger of a command whose config could
// not be read.
func (c *common) flagLogger(env *Env, source string) (lager.Logger, func()) {
	logger, closer, onStderr := app.FlagLogger(c.logFlags(), env.Stderr, source)
	c.logsOnStderr = onStderr
	return logger, closer
}

func (c *common) logFlags() app.LogFlags {
	return app.LogFlags{File: c.logFile, TimeFormat: c.timeFormat, Level: c.logLevel}
}

// errorf prints "cellguard: error: ..." to stderr, for humans; the same fact
// should also be logged by the caller when the log is a file (failed). A
// config's *config.Error is every problem of the file: a line each.
func errorf(env *Env, format string, args ...any) {
	if err, ok := singleError(format, args); ok {
		app.PrintErr(env.Stderr, err)
		return
	}
	app.Errorf(env.Stderr, format, args...)
}

// singleError is the error errorf(env, "%v", err) prints.
func singleError(format string, args []any) (error, bool) {
	if format != "%v" || len(args) != 1 {
		return nil, false
	}
	err, ok := args[0].(error)
	return err, ok
}

// failed reports err once wherever it is read: the "cellguard: error:"
// line on stderr, and the log when the log is a file. A log on stderr
// would print it a second time beside the line.
func (c *common) failed(env *Env, logger lager.Logger, action string, err error) {
	if !c.logsOnStderr {
		logger.Error(action, err)
	}
	errorf(env, "%v", err)
}

// hintf prints "cellguard: hint: ..." after an error.
func hintf(env *Env, format string, args ...any) { app.Hintf(env.Stderr, format, args...) }

// printJSON writes v to stdout as one indented JSON document (--json).
func printJSON(env *Env, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if enc.Encode(v) == nil {
		_, _ = env.Stdout.Write(app.EscapeJSON(b.Bytes())) // names a tenant chose reach a terminal
	}
}

// stringList is a repeatable string flag.
type stringList = cmdflag.List

// DefaultEnv is the process environment.
func DefaultEnv() *Env {
	return &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// loadConfig is app.LoadConfig: path, else the job's config when it
// exists, else an empty one.
func loadConfig(path string) (*config.Config, error) { return app.LoadConfig(path) }
