// Package safefile is cellguard's care with files that decide what it
// does as root: it writes them so a crash leaves the old or the new
// content, never a torn one, and never follows a symlink planted in the
// target directory (WriteFileAtomic); it removes what such a write left
// behind when it was killed (RemoveStaleTemps); and it refuses to act on
// one that someone other than root could change or replace, the file or
// any directory on the way to it (CheckTrusted): the job config, an
// operator's advisory list, a drain lift, a pidfile before a signal, a
// runtime binary before an exec. Builds with -tags cellguard_crashtest
// also carry the crash hook (crashPoint in WriteFileAtomic, Crash
// elsewhere) that the crash tests kill cellguard with.
package safefile
