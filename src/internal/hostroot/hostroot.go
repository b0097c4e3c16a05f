// Package hostroot is the one rule for the root prefix every package that
// reads the host takes (Root string): the live host is "/" or "", and any
// other root is a tree that stands for a host (a fixture, a benchmark
// cell, a container seen from outside as /proc/<pid>/root).
package hostroot

import "path/filepath"

// Dir is root as a directory: "" means "/".
func Dir(root string) string {
	if root == "" {
		return "/"
	}
	return root
}

// IsLive reports whether root is the live host's: "" or "/".
func IsLive(root string) bool { return root == "" || root == "/" }

// Join puts the host path p (slash-separated, absolute) below root; on
// the live host it is p itself.
func Join(root, p string) string {
	if IsLive(root) {
		return filepath.FromSlash(p)
	}
	return filepath.Join(root, filepath.FromSlash(p))
}
