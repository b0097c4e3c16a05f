package config

import (
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
)

// CheckHost judges what the config names on the host under root, which
// Load does not read: every configured runtime binary is an executable
// file. `config check` (pre-start's first step) asks it; validate's
// runtime-versions check reads the binaries itself. name is the file's,
// for the error.
func (c *Config) CheckHost(name, root string) error {
	var ps problems
	// Only the configured paths: no PATH search.
	loc := runtimever.Locator{Root: root, Configured: c.Validator.RuntimeBinaries, Path: []string{}}
	for _, comp := range sortedKeys(c.Validator.RuntimeBinaries) {
		if _, missing := loc.Locate(comp); len(missing) > 0 {
			ps.add("validator.runtime_binaries."+comp, quote(missing[0].Path),
				"not an executable file under %s: %v; want the runtime's binary as its release installs it", root, missing[0].Err)
		}
	}
	if len(ps) > 0 {
		return &Error{File: name, Problems: ps}
	}
	return nil
}
