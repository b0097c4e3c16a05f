package cli

import "context"

// notYet backs subcommands whose slice has not landed; it is removed when
// the last of them does.
func notYet(_ context.Context, env *Env, _ []string) int {
	errorf(env, "not implemented yet")
	return ExitCantRun
}
