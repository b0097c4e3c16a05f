package cli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

// watchStatusCommand is `cellguard watch status`.
func watchStatusCommand() *Command {
	var root, pidfile string
	return &Command{Name: "status", Usage: "watch status [--pidfile PATH] [--root DIR]", Help: helpText("watch-status"), Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&pidfile, "pidfile", watchPIDFile, "the pidfile bin/watch_ctl writes")
			fs.StringVar(&root, "root", "/", "root prefix for the pidfile and /proc (tests: a fixture tree)")
		},
		Run: func(_ context.Context, c *call) int {
			pid, why := app.WatchRunning(root, pidfile)
			if why != "" {
				fmt.Fprintf(c.Stderr, "cellguard watch does not run: %s\n", why)
				return ExitFailed
			}
			fmt.Fprintln(c.Stdout, pid)
			return ExitOK
		}}
}
