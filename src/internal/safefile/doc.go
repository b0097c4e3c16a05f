// Package safefile is cellguard's care with files that decide what it
// does as root: it writes them so a crash leaves the old or the new
// content, never a torn one, and never follows a symlink planted in the
// target directory (WriteFileAtomic); it removes what such a write left
// behind when it was killed (RemoveStaleTemps); and it refuses to act on
// one that someone other than root could change or replace, the file or
// any directory or symlink on the way to it, and hands back the file it
// checked, open, so it is read or run and never reopened by its path
// (OpenTrusted): the job config, an operator's advisory list, a drain
// lift, a pidfile before a signal, a ctl script or runtime binary before
// an exec. Builds with -tags cellguard_crashtest also carry the crash
// hook (crashPoint in WriteFileAtomic, Crash elsewhere) that the crash
// tests kill cellguard with.
package safefile
