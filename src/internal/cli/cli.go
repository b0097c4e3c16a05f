// Package cli holds cellguard's subcommands: flags -> a use case in
// package app -> output and exit code. It imports only app, config and
// logging (and pflag for the flags); each subcommand is one file here, one
// line in Commands and, for its --help prose, one file in help/.
//
// Output rules: results a caller may parse (tables, --json, drain's integer)
// go to Stdout; logs (lager JSON) go to Stderr or --log-file, never to Stdout.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/logging"
)

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

// DefaultEnv is the process environment.
func DefaultEnv() *Env {
	return &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// The positionals a command takes (Command.Args).
const (
	anyArgs = iota // Run judges them
	noArgs
	oneName // exactly one daemon NAME
)

// Command is one subcommand, a group of them (Sub without Run), or both
// (drain, and drain lift ...).
type Command struct {
	Name    string
	Summary string
	// Usage follows "usage: cellguard " in --help, before the flags;
	// Help follows them ({checks} and {on-event} filled in).
	Usage, Help string
	Args        int
	// Interspersed lets flags follow positionals ("cellguard start garden --json").
	Interspersed bool
	// Flags registers the command's own flags; every command has the common ones.
	Flags func(fs *pflag.FlagSet)
	// Run does the command once its flags are read and returns the exit code.
	Run func(ctx context.Context, c *call) int
	// BadFlag, when set, runs after a flag error is printed (drain's integer).
	BadFlag func(c *call, args []string)
	Sub     []*Command
}

// Commands is the one list of cellguard's subcommands.
func Commands() []*Command {
	return []*Command{
		unitCommand(),
		startStopCommand("start", "start a daemon's delegated unit and wait for its process (monit's start program)"),
		startStopCommand("stop", "stop a daemon's delegated unit and wait for its process to go (monit's stop program)"),
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
		if c.Run == nil || len(args) > 1 && c.sub(args[1]) {
			return dispatch(ctx, env, prog+" "+c.Name, c.Sub, args[1:])
		}
		return c.run(ctx, env, strings.TrimPrefix(prog+" "+c.Name, "cellguard "), args[1:])
	}
	fmt.Fprintf(env.Stderr, "cellguard: error: unknown command %q\n", strings.TrimSpace(strings.TrimPrefix(prog+" "+args[0], "cellguard ")))
	fmt.Fprintf(env.Stderr, "cellguard: hint: run '%s --help' for the commands\n", prog)
	return ExitCantRun
}

func (c *Command) sub(name string) bool {
	for _, s := range c.Sub {
		if s.Name == name {
			return true
		}
	}
	return false
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

// call is one run of a command: its environment, its common flags and
// its positionals.
type call struct {
	*Env
	name string // "unit install"
	fs   *pflag.FlagSet
	args []string

	logFile, timeFormat, logLevel, configPath string
	// logsOnStderr: no log file, so the log shares stderr with the
	// "cellguard: error:" lines (set by setup and flagLogger).
	logsOnStderr bool
}

// run reads the flags and positionals of c and runs it. A bad flag is one
// error line and one hint, never the whole flag list; asked-for help goes
// to stdout.
func (c *Command) run(ctx context.Context, env *Env, name string, args []string) int {
	r := &call{Env: env, name: name, fs: pflag.NewFlagSet(name, pflag.ContinueOnError)}
	fs := r.fs
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(c.Interspersed)
	fs.StringVar(&r.logFile, "log-file", "", "append logs to this file instead of stderr")
	fs.StringVar(&r.timeFormat, "log-time-format", "unix-epoch", "log timestamps: unix-epoch or rfc3339 (as Garden's --time-format)")
	fs.StringVar(&r.logLevel, "log-level", "info", "debug, info, error or fatal")
	fs.StringVar(&r.configPath, "config", "", "cellguard config file (JSON rendered by the BOSH job); default "+app.DefaultConfigPath+" when it exists")
	if c.Flags != nil {
		c.Flags(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "usage: cellguard %s\n\nflags:\n%s", c.Usage, fs.FlagUsages())
		fmt.Fprint(env.Stdout, expand(c.Help))
	}
	switch err := fs.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return ExitOK
	case err != nil:
		r.errorf("%s: %v", name, err)
		r.hintf("run 'cellguard %s --help' for its flags", name)
		if c.BadFlag != nil {
			c.BadFlag(r, args)
		}
		return ExitCantRun
	}
	r.args = fs.Args()
	switch {
	case c.Args == noArgs && len(r.args) > 0:
		r.errorf("unexpected arguments: %s", strings.Join(r.args, " "))
		return ExitCantRun
	case c.Args == oneName && len(r.args) != 1:
		r.errorf("want exactly one daemon NAME, got %d arguments", len(r.args))
		r.hintf("run 'cellguard %s --help' for its usage", name)
		return ExitCantRun
	}
	return c.Run(ctx, r)
}

// expand fills the help texts' placeholders, read only when help is asked for.
func expand(help string) string {
	return strings.NewReplacer("{checks}", strings.Join(app.CheckIDs(), ", "), "{on-event}", strings.Join(app.OnEvent, ", ")).Replace(help)
}

// setup loads the config and builds the lager logger for a command. The
// config is optional unless --config names a file.
func (c *call) setup(source string) (logging.Logger, *config.Config, func(), error) {
	cfg, err := app.LoadConfig(c.configPath)
	if err != nil {
		return nil, nil, nil, err
	}
	logger, closer, onStderr, err := app.Logger(c.logFlags(), cfg, c.Stderr, source)
	if err != nil {
		return nil, nil, nil, err
	}
	c.logsOnStderr = onStderr
	return logger, cfg, closer, nil
}

// flagLogger is app.FlagLogger: the logger of a command whose config could
// not be read.
func (c *call) flagLogger(source string) (logging.Logger, func()) {
	logger, closer, onStderr := app.FlagLogger(c.logFlags(), c.Stderr, source)
	c.logsOnStderr = onStderr
	return logger, closer
}

func (c *call) logFlags() app.LogFlags {
	return app.LogFlags{File: c.logFile, TimeFormat: c.timeFormat, Level: c.logLevel}
}

// fail prints err for people: a config's *config.Error a line per problem,
// anything else one "cellguard: error:" line.
func (c *call) fail(err error) { app.PrintErr(c.Stderr, err) }

// errorf prints "cellguard: error: ..." to stderr, for humans; the same fact
// should also be logged by the caller when the log is a file (failed).
func (c *call) errorf(format string, args ...any) { app.Errorf(c.Stderr, format, args...) }

// hintf prints "cellguard: hint: ..." after an error.
func (c *call) hintf(format string, args ...any) { app.Hintf(c.Stderr, format, args...) }

// failed reports err once wherever it is read: the "cellguard: error:"
// line on stderr, and the log when the log is a file. A log on stderr
// would print it a second time beside the line.
func (c *call) failed(logger logging.Logger, action string, err error) {
	if !c.logsOnStderr {
		logger.Error(action, err)
	}
	c.fail(err)
}

// show writes v as one indented JSON document (--json), else for people.
func (c *call) show(asJSON bool, v any, human func(w io.Writer)) {
	if !asJSON {
		human(c.Stdout)
		return
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if enc.Encode(v) == nil {
		_, _ = c.Stdout.Write(app.EscapeJSON(b.Bytes())) // names a tenant chose reach a terminal
	}
}
