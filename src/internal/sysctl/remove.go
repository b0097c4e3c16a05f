package sysctl

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
)

// Marker starts every file Apply persists: RemoveFile removes no other.
const Marker = "# Written by cellguard"

// ErrNotOurs means the file at the profile's path was not written by
// cellguard; it is left alone.
var ErrNotOurs = errors.New("not written by cellguard")

// RemoveFile removes the persisted file, when cellguard wrote it, so the
// next boot does not set its values again. Live values are left alone:
// cellguard does not know what they were before it set them, and a
// running container host may depend on them; a reboot (or a recreate,
// which starts from the stemcell) returns each key to the kernel's or the
// other sysctl.d files' value. It reports whether a file was removed.
func (h Host) RemoveFile(file string) (bool, error) {
	if err := validateFile(file); err != nil {
		return false, err
	}
	target := hostroot.Join(h.Root, file)
	b, err := os.ReadFile(target)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read %s: %w", file, err)
	}
	if !bytes.HasPrefix(b, []byte(Marker)) {
		return false, fmt.Errorf("%s is %w (it does not start with %q): left alone", file, ErrNotOurs, Marker)
	}
	removed, err := safefile.RemoveIfExists(target)
	if err != nil {
		return false, fmt.Errorf("remove %s: %w", file, err)
	}
	return removed, nil
}
