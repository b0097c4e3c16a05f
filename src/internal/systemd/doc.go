// Package systemd is cellguard's only door to systemd: a thin,
// context-first client of systemd's D-Bus API over go-systemd's dbus.Conn.
// Nothing here shells out to systemctl.
//
// go-systemd makes the calls and follows the jobs cellguard starts
// (JobRemoved, on the second connection its NewConnection dials). Conn
// keeps the two godbus connections it handed go-systemd: GetUnitProcesses
// and the Manager's Version under a context are called on the first,
// which go-systemd has no method for, and Watch reads systemd's signals on
// the second beside go-systemd. Until issue 24 a hand-written client made
// the calls and followed jobs on one connection, to save 2-3 ms of a
// `cellguard start`; go-systemd's two connections measured no slower than
// that one (docs/performance.md).
//
// Dial tries the system bus first, then systemd's private socket, as
// go-systemd's NewWithContext does: the bus forwards only the signals
// asked for, while the private socket sends every client every signal.
package systemd
