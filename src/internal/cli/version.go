package cli

import (
	"context"
	"fmt"
)

// Version is set at build time: -ldflags "-X .../cli.Version=1.2.3".
var Version = "dev"

func versionCommand() *Command {
	return &Command{
		Name:    "version",
		Summary: "print cellguard's version",
		Run: func(_ context.Context, env *Env, args []string) int {
			var c common
			fs := newFlagSet(env, "version", "version", &c)
			if ok, code := parse(fs, args); !ok {
				return code
			}
			fmt.Fprintln(env.Stdout, Version)
			return ExitOK
		},
	}
}
