package cli

import "context"

// placeholder until the units slice lands in this file.
func notYet(_ context.Context, env *Env, _ []string) int {
	errorf(env, "not implemented yet")
	return ExitCantRun
}

func unitCommand() *Command {
	return &Command{Name: "unit", Summary: "install and inspect delegated systemd units", Sub: []*Command{
		{Name: "install", Summary: "install a delegated unit for a monit-managed daemon", Run: notYet},
	}}
}
func startCommand() *Command { return &Command{Name: "start", Summary: "start a daemon's unit", Run: notYet} }
func stopCommand() *Command  { return &Command{Name: "stop", Summary: "stop a daemon's unit", Run: notYet} }
