// Package safefile is cellguard's care with files that decide what it
// does as root: it writes them so a crash leaves the old or the new
// content, never a torn one, and never follows a symlink planted in the
// target directory (WriteFileAtomic); it removes what such a write left
// behind when it was killed (RemoveStaleTemps); and it refuses to read one
// that someone other than root could change (CheckTrusted): the job
// config, an operator's advisory list, a drain lift.
package safefile
