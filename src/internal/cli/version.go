package cli

import (
	"context"
	"fmt"
)

// Version is set at build time: -ldflags "-X .../cli.Version=1.2.3".
var Version = "dev"

func versionCommand() *Command {
	return &Command{Name: "version", Summary: "print cellguard's version", Usage: "version",
		Run: func(_ context.Context, c *call) int {
			fmt.Fprintln(c.Stdout, Version)
			return ExitOK
		}}
}
