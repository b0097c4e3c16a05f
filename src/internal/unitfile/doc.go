// Package unitfile turns a daemon's description into the text of a delegated
// systemd unit (or a drop-in for a supervisor unit) and refuses any input
// that could inject a directive, then lets go-systemd's unit package write
// (Serialize) and read (DeserializeOptions, in Setting) the format. It is
// pure: no I/O, no D-Bus.
package unitfile
