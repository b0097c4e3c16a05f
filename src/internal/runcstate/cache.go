package runcstate

import "golang.org/x/sys/unix"

// Cache keeps what each runc state file decoded to, by its path, with the
// file's identity when it was read: device, inode, size, mtime and ctime.
// A Discover through it decodes a file again only when one of those
// changed. runc replaces state.json by renaming a new file over it (a new
// inode); a write in place changes ctime, and mtime and size with it. A
// Cache serves one caller at a time; the States it hands out are shared
// between Discovers and must not be modified.
type Cache struct {
	files map[string]cached
	// Decoded counts the files decoded by the last Discover.
	Decoded int
}

type cached struct {
	id    fileID
	state *State
}

// fileID is what tells a state file's content has not changed.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

func idOf(st *unix.Stat_t) fileID {
	return fileID{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// Discover is Discover, decoding only the state files that changed since
// the cache's last Discover. Files gone are forgotten.
func (c *Cache) Discover(root string, runtimeRoots, namespaces []string) (*Discovery, error) {
	return discover(root, runtimeRoots, namespaces, c)
}

// Reset forgets every file: the next Discover decodes them all.
func (c *Cache) Reset() { c.files = nil }

// Fork is a Cache that starts from what c knows. A Discover replaces its
// cache's record of the files instead of changing it, so c and its forks
// may each Discover at the same time, through their own.
func (c *Cache) Fork() *Cache { return &Cache{files: c.files} }
