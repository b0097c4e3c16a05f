// Command cellguard protects container hosts from systemd moving container
// processes out of their cgroups: delegated units for monit-managed daemons,
// container-host sysctls, and a validator that blocks unsafe rollouts.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cloudfoundry/cellguard/src/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.DefaultEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
