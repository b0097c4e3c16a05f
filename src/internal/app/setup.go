package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/logging"
)

// DefaultConfigPath is where the BOSH job renders the config
// (jobs/cellguard/templates/config/cellguard.json.erb).
const DefaultConfigPath = "/var/vcap/jobs/cellguard/config/cellguard.json"

// LoadConfig loads path, or DefaultConfigPath when path is empty and that
// file exists, or an empty config: every subcommand also runs from flags
// alone.
func LoadConfig(path string) (*config.Config, error) {
	if path != "" {
		return config.Load(path, CheckIDs())
	}
	if _, err := os.Stat(DefaultConfigPath); err == nil {
		return config.Load(DefaultConfigPath, CheckIDs())
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("stat config %s: %w", DefaultConfigPath, err)
	}
	return &config.Config{}, nil
}

// LogFlags are the log flags every subcommand takes.
type LogFlags struct{ File, TimeFormat, Level string }

// Logger is the lager logger of source: the flags, with the config's log
// section filling what they left at their defaults. onStderr says the log
// shares stderr with the lines people read.
func Logger(f LogFlags, cfg *config.Config, stderr io.Writer, source string) (logger lager.Logger, closer func(), onStderr bool, err error) {
	opts := logging.Options{File: f.File, TimeFormat: f.TimeFormat, Level: f.Level}
	if opts.File == "" {
		opts.File = cfg.Log.File
	}
	if opts.TimeFormat == "unix-epoch" && cfg.Log.TimeFormat != "" {
		opts.TimeFormat = cfg.Log.TimeFormat
	}
	if opts.Level == "info" && cfg.Log.Level != "" {
		opts.Level = cfg.Log.Level
	}
	l, c, err := logging.New(opts, stderr)
	if err != nil {
		return nil, nil, false, err
	}
	return l.Session(source), func() { _ = c() }, opts.File == "", nil
}

// FlagLogger is the logger of a command whose config could not be read:
// the flags' log file and format, else stderr. It never fails, so a
// command that must report (drain) always can.
func FlagLogger(f LogFlags, stderr io.Writer, source string) (logger lager.Logger, closer func(), onStderr bool) {
	l, c, err := logging.New(logging.Options{File: f.File, TimeFormat: f.TimeFormat, Level: f.Level}, stderr)
	if err != nil {
		l, c, _ = logging.New(logging.Options{}, stderr)
		l.Error("log-setup", err)
	}
	return l.Session(source), func() { _ = c() }, f.File == "" || err != nil
}

// CheckConfig is `config check`: the config at path (DefaultConfigPath
// when empty) judged by the one judge every command runs (config.Load),
// then the runtime binaries it names under root. It returns what the
// config holds, in a line for people.
func CheckConfig(path, root string) (string, error) {
	if path == "" {
		path = DefaultConfigPath
	}
	cfg, err := config.Load(path, CheckIDs())
	if err == nil {
		err = cfg.CheckHost(path, root)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: ok: %d daemons, supervisor protect=%t, sysctl profile %q, %d validator runtime roots",
		path, len(cfg.Daemons), cfg.Supervisor.Protect, cfg.Sysctl.Profile, len(cfg.Validator.RuntimeRoots)), nil
}
