package cli

// Placeholder: the validator slice (issue 4) replaces this file.
func validateCommand() *Command {
	return &Command{Name: "validate", Summary: "check container cgroups and runtimes; block unsafe rollouts", Run: notYet}
}
