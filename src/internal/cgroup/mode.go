package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	cgroups "github.com/containerd/cgroups/v3"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
)

// Mode is how the host mounts cgroups.
type Mode int

const (
	Unavailable Mode = iota
	Legacy           // cgroup v1 only
	Hybrid           // v1 controllers plus a v2 hierarchy at /sys/fs/cgroup/unified
	Unified          // cgroup v2 only
)

func (m Mode) String() string {
	switch m {
	case Legacy:
		return "legacy"
	case Hybrid:
		return "hybrid"
	case Unified:
		return "unified"
	}
	return "unavailable"
}

// MountDir is where the cgroup filesystems live, relative to the root.
const MountDir = "/sys/fs/cgroup"

// DetectMode tells the cgroup mode of the tree under root. On the live host
// (root "/" or "") it asks containerd/cgroups, which statfs()es the mounts;
// under any other root it reads the layout: cgroup.controllers at the top
// means v2, under unified/ means hybrid, a directory of hierarchies means v1.
func DetectMode(root string) (Mode, error) {
	if hostroot.IsLive(root) {
		switch cgroups.Mode() {
		case cgroups.Legacy:
			return Legacy, nil
		case cgroups.Hybrid:
			return Hybrid, nil
		case cgroups.Unified:
			return Unified, nil
		}
		return Unavailable, fmt.Errorf("detect cgroup mode: %s is not a cgroup mount", MountDir)
	}
	return detectFromLayout(root)
}

func detectFromLayout(root string) (Mode, error) {
	base := filepath.Join(root, MountDir)
	switch {
	case exists(filepath.Join(base, "cgroup.controllers")):
		return Unified, nil
	case exists(filepath.Join(base, "unified", "cgroup.controllers")):
		return Hybrid, nil
	}
	ents, err := os.ReadDir(base)
	if err != nil {
		return Unavailable, fmt.Errorf("detect cgroup mode: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() {
			return Legacy, nil
		}
	}
	return Unavailable, fmt.Errorf("detect cgroup mode: no hierarchy under %s", base)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
