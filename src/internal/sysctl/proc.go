package sysctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Live is the running kernel's view of sysctls. Proc is the real one; tests
// wrap it to make a fake kernel refuse a value the way the real one does.
type Live interface {
	// Stat reports whether the key exists and can be read and written.
	Stat(k Key) (KeyInfo, error)
	// Read returns the value as the kernel prints it.
	Read(k Key) (string, error)
	// Write writes value; the kernel's refusal (EINVAL) is returned as is.
	Write(k Key, value string) error
}

// KeyInfo is what Stat learns about a key's file.
type KeyInfo struct {
	Exists    bool
	Readable  bool
	Writable  bool
	Directory bool
}

// Proc reads and writes files below Dir, normally /proc/sys.
type Proc struct {
	Dir string
}

var _ Live = Proc{}

func (p Proc) file(k Key) string { return filepath.Join(p.Dir, filepath.FromSlash(k.Path())) }

// Stat looks at the mode bits rather than calling access(2): root passes
// access checks on a fixture tree, while /proc/sys encodes read-only and
// write-only keys in the mode (0444 kernel.osrelease, 0200 vm.drop_caches).
func (p Proc) Stat(k Key) (KeyInfo, error) {
	fi, err := os.Lstat(p.file(k))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return KeyInfo{}, nil
	}
	if err != nil {
		return KeyInfo{}, fmt.Errorf("stat sysctl %s: %w", k, err)
	}
	if fi.IsDir() {
		return KeyInfo{Exists: true, Directory: true}, nil
	}
	if !fi.Mode().IsRegular() {
		return KeyInfo{}, fmt.Errorf("stat sysctl %s: %s is not a regular file (%s)", k, p.file(k), fi.Mode().Type())
	}
	m := fi.Mode().Perm()
	return KeyInfo{Exists: true, Readable: m&0o444 != 0, Writable: m&0o222 != 0}, nil
}

// Read returns the raw value, newline included.
func (p Proc) Read(k Key) (string, error) {
	b, err := os.ReadFile(p.file(k))
	if err != nil {
		return "", fmt.Errorf("read sysctl %s: %w", k, err)
	}
	return string(b), nil
}

// Write writes value plus a newline in one write(2), as systemd-sysctl
// does: a sysctl handler parses one buffer, so a split write could apply
// half a vector. O_TRUNC replaces a fixture file's content and is harmless
// on procfs; there is no O_CREAT, so an unknown key is never created.
func (p Proc) Write(k Key, value string) error {
	f, err := os.OpenFile(p.file(k), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("open sysctl %s: %w", k, err)
	}
	_, werr := f.Write([]byte(value + "\n"))
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write sysctl %s: %w", k, werr)
	}
	if cerr != nil {
		return fmt.Errorf("close sysctl %s: %w", k, cerr)
	}
	return nil
}

// rejected reports whether a write error means the kernel refused the value
// itself (bad input) rather than refusing us (permissions, read-only fs).
func rejected(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ERANGE) || errors.Is(err, syscall.EOVERFLOW)
}
