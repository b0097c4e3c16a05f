package sysctl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
)

// SysctlConf is read after every sysctl.d file, as procps's
// `sysctl --system` does. systemd-sysctl (since v207) reads it only through
// the 99-sysctl.conf symlink Debian and Ubuntu ship in /etc/sysctl.d; when
// that symlink exists the file is read once, at its place in the order.
const SysctlConf = "/etc/sysctl.conf"

// ConfFile is one file of the boot-time configuration.
type ConfFile struct {
	Path string `json:"path"` // host path, e.g. /etc/sysctl.d/60-other.conf
	Name string `json:"name"` // base name: what the order and masking use
	// Target is where a symlink points (host path), e.g. /etc/sysctl.conf
	// for Debian's 99-sysctl.conf.
	Target string `json:"target,omitempty"`
	// MaskedBy is the file with the same name in an earlier directory that
	// hides this one; masked files are not read.
	MaskedBy string `json:"masked_by,omitempty"`
	// Null is set for a symlink to /dev/null or an empty file: it reads as
	// nothing and masks later files of the same name.
	Null bool `json:"null,omitempty"`
	// Last is set for /etc/sysctl.conf read after all sysctl.d files.
	Last bool   `json:"last,omitempty"`
	Err  string `json:"error,omitempty"` // unreadable: systemd logs and skips it
}

// Label names the file for an operator: its path, plus the symlink target.
func (f ConfFile) Label() string {
	if f.Target != "" {
		return fmt.Sprintf("%s (-> %s)", f.Path, f.Target)
	}
	return f.Path
}

// Assignment is one line of a sysctl.d file.
type Assignment struct {
	// Key is the name in path form ("net/ipv4/ip_forward") as systemd
	// normalizes it; Pattern is set when it is a glob.
	Key     string `json:"key"`
	Pattern bool   `json:"pattern,omitempty"`
	// Value is empty with HasValue false for "-key" lines, which exclude a
	// key from globs and cancel an earlier assignment of it.
	Value    string `json:"value"`
	HasValue bool   `json:"has_value"`
	// IgnoreErrors is set by a leading "-" on an assignment.
	IgnoreErrors bool `json:"ignore_errors,omitempty"`
	File         int  `json:"-"` // index into BootConfig.Files
	Line         int  `json:"line"`
}

// BootConfig is what systemd-sysctl would apply at boot.
type BootConfig struct {
	Files []ConfFile // every file found, read order first, masked ones after
	// order is every assignment in read order; final mirrors systemd's
	// ordered hashmap: one entry per key, a changed value moves to the end.
	order []Assignment
	final []Assignment
}

// LoadBoot reads the sysctl.d directories and /etc/sysctl.conf below root
// with systemd-sysctl's rules:
//   - directories /etc, /run, /usr/local/lib, /usr/lib, /lib sysctl.d; a
//     file name in an earlier directory masks the same name in later ones
//     (a symlink to /dev/null or an empty file masks and sets nothing);
//   - the remaining *.conf files are read in lexical order of their names,
//     whichever directory holds them; a later assignment of a key wins;
//   - /etc/sysctl.conf is read last unless a sysctl.d symlink already
//     brought it in.
//
// Missing directories are normal; an unreadable file is recorded in Files
// and skipped, as systemd does.
func LoadBoot(root string) (*BootConfig, error) {
	byName := map[string]int{}
	var files []ConfFile
	var masked []ConfFile
	for _, dir := range sysctlDirs {
		ents, err := os.ReadDir(hostroot.Join(root, dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read sysctl dir %s: %w", dir, err)
		}
		for _, de := range ents {
			name := de.Name()
			if !strings.HasSuffix(name, ".conf") || strings.HasPrefix(name, ".") {
				continue
			}
			f := ConfFile{Path: path.Join(dir, name), Name: name}
			if i, seen := byName[name]; seen {
				f.MaskedBy = files[i].Path
				masked = append(masked, f)
				continue
			}
			byName[name] = len(files)
			files = append(files, f)
		}
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].Name < files[j].Name })

	b := &BootConfig{}
	haveConf := false
	for _, f := range files {
		data, err := readConf(root, &f)
		if f.Target == SysctlConf {
			haveConf = true
		}
		b.Files = append(b.Files, f)
		if err == nil {
			b.parse(len(b.Files)-1, data)
		}
	}
	if !haveConf {
		f := ConfFile{Path: SysctlConf, Name: path.Base(SysctlConf), Last: true}
		if _, err := os.Lstat(hostroot.Join(root, SysctlConf)); err == nil {
			data, err := readConf(root, &f)
			b.Files = append(b.Files, f)
			if err == nil {
				b.parse(len(b.Files)-1, data)
			}
		}
	}
	b.Files = append(b.Files, masked...)
	return b, nil
}

// readConf reads f below root, following symlinks inside root (an absolute
// target is taken relative to root, as it would be on the host) and
// recording the final target and whether it is /dev/null or empty.
func readConf(root string, f *ConfFile) ([]byte, error) {
	p := f.Path
	for hops := 0; ; hops++ {
		fi, err := os.Lstat(hostroot.Join(root, p))
		if err != nil {
			f.Err = err.Error()
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		if hops == 8 {
			f.Err = "too many levels of symbolic links"
			return nil, errors.New(f.Err)
		}
		t, err := os.Readlink(hostroot.Join(root, p))
		if err != nil {
			f.Err = err.Error()
			return nil, err
		}
		if !path.IsAbs(t) {
			t = path.Join(path.Dir(p), t)
		}
		p = path.Clean(t)
		f.Target = p
		if p == "/dev/null" {
			f.Null = true
			return nil, nil
		}
	}
	data, err := os.ReadFile(hostroot.Join(root, p))
	if err != nil {
		f.Err = err.Error()
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		f.Null = true
	}
	return data, nil
}

// parse follows systemd's parse_file(): '#' and ';' start comments,
// "key = value" assigns, "-key = value" assigns ignoring errors, "-key"
// alone excludes the key from globs; other lines are ignored.
func (b *BootConfig) parse(file int, data []byte) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		a := Assignment{File: file, Line: n}
		key := line
		if i := strings.IndexByte(line, '='); i >= 0 {
			key = line[:i]
			a.Value, a.HasValue = NormalizeValue(line[i+1:]), true
			if strings.HasPrefix(key, "-") {
				a.IgnoreErrors = true
				key = key[1:]
			}
		} else if strings.HasPrefix(line, "-") {
			key = line[1:]
		} else {
			continue // systemd: "Line is not an assignment, ignoring"
		}
		a.Key = systemdNormalize(strings.TrimSpace(key))
		if a.Key == "" {
			continue
		}
		a.Pattern = strings.ContainsAny(a.Key, "*?[")
		b.add(a)
	}
}

// add mirrors systemd's ordered hashmap: an equal value keeps its place,
// a different one (or a "-key") replaces the old entry at the end.
func (b *BootConfig) add(a Assignment) {
	b.order = append(b.order, a)
	for i, old := range b.final {
		if old.Key != a.Key {
			continue
		}
		if old.HasValue == a.HasValue && old.Value == a.Value {
			b.final[i].IgnoreErrors = old.IgnoreErrors || a.IgnoreErrors
			return
		}
		b.final = append(b.final[:i], b.final[i+1:]...)
		break
	}
	b.final = append(b.final, a)
}

// systemdNormalize is sysctl_normalize(): swap separators when the first is
// a dot, simplify the path, drop a leading slash.
func systemdNormalize(s string) string {
	p := normalizePath(s)
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

// Winner is the assignment systemd-sysctl would apply to k at boot, or nil
// when nothing sets it. An explicit entry for the key (a "-key" line too)
// shuts out every glob; among globs the last in order wins.
func (b *BootConfig) Winner(k Key) *Assignment {
	for i := range b.final {
		if b.final[i].Key == k.Path() && !b.final[i].Pattern {
			if !b.final[i].HasValue {
				return nil
			}
			a := b.final[i]
			return &a
		}
	}
	var win *Assignment
	for i := range b.final {
		a := b.final[i]
		if a.Pattern && a.HasValue {
			if ok, _ := path.Match(a.Key, k.Path()); ok {
				win = &a
			}
		}
	}
	return win
}

// without is the boot configuration as if the file at host path p set
// nothing: what the other files leave a key at.
func (b *BootConfig) without(p string) *BootConfig {
	nb := &BootConfig{Files: b.Files}
	for _, a := range b.order {
		if b.Files[a.File].Path != p {
			nb.add(a)
		}
	}
	return nb
}

// History is every assignment that names k, explicitly or by glob, in read
// order.
func (b *BootConfig) History(k Key) []Assignment {
	var out []Assignment
	for _, a := range b.order {
		if a.Key == k.Path() {
			out = append(out, a)
		} else if a.Pattern {
			if ok, _ := path.Match(a.Key, k.Path()); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

// lastIn is the last explicit assignment of k in the file at host path p,
// or nil when that file does not set k.
func (b *BootConfig) lastIn(p string, k Key) *Assignment {
	var last *Assignment
	for _, a := range b.History(k) {
		if b.File(a).Path == p && a.Key == k.Path() {
			a := a
			last = &a
		}
	}
	return last
}

// File returns the file an assignment came from.
func (b *BootConfig) File(a Assignment) ConfFile { return b.Files[a.File] }

// lookup returns the ConfFile for a host path, whether read or masked.
func (b *BootConfig) lookup(p string) (ConfFile, bool) {
	for _, f := range b.Files {
		if f.Path == p {
			return f, true
		}
	}
	return ConfFile{}, false
}
