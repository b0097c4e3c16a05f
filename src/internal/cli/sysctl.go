package cli

// Placeholder: the sysctl slice (issue 3) replaces this file.
func sysctlCommand() *Command {
	return &Command{Name: "sysctl", Summary: "apply and check container-host sysctls", Run: notYet}
}
