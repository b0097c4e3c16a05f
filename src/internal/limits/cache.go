package limits

import (
	"os"
	"sync"
	"syscall"
)

// stateCache keeps each state file's decoded resources while the file is
// unchanged. Decoding them is most of a read's cost (a Garden state.json
// is ~26 KB, ~1 ms with encoding/json: a quarter of a second on a cell of
// 250, in every one of watch's event scans), and runc writes a state
// file whole and renames it into place (libcontainer's saveState), so an
// unchanged inode, size and mtime is an unchanged file.
type stateCache struct {
	mu sync.Mutex
	m  map[string]cachedResources
}

type cachedResources struct {
	id  fileID
	res Resources
}

type fileID struct {
	ino, size  int64
	mtime      int64 // ns
	dev, ctime uint64
}

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{ino: int64(st.Ino), size: st.Size, mtime: fi.ModTime().UnixNano(), dev: uint64(st.Dev),
		ctime: uint64(st.Ctim.Sec)*1e9 + uint64(st.Ctim.Nsec)}, true
}

// resources is readResources through the cache.
func (c *stateCache) resources(statePath string) (Resources, error) {
	fi, err := os.Stat(statePath)
	if err != nil {
		return readResources(statePath) // says why, in its words
	}
	id, ok := idOf(fi)
	if ok {
		c.mu.Lock()
		e, hit := c.m[statePath]
		c.mu.Unlock()
		if hit && e.id == id {
			return e.res, nil
		}
	}
	res, err := readResources(statePath)
	if err != nil || !ok {
		return res, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedResources{}
	}
	c.m[statePath] = cachedResources{id: id, res: res}
	c.mu.Unlock()
	return res, nil
}

// keep drops the entries of state files not in seen (containers gone).
func (c *stateCache) keep(seen map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.m {
		if !seen[p] {
			delete(c.m, p)
		}
	}
}

// states is the process's cache: validate reads once, watch reads on
// every event, and both read the same state files.
var states stateCache
