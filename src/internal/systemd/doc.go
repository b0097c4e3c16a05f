// Package systemd is cellguard's only door to systemd: a thin,
// context-first client of systemd's D-Bus API. Nothing here shells out to
// systemctl.
//
// One connection carries the calls and the JobRemoved signals that end
// the jobs cellguard starts, as systemctl's does. go-systemd's dbus.Conn
// would need two: its NewConnection calls the dial function twice and
// documents that it "should return independent connections", one for
// calls and one for signals (go-systemd v22.7.0, dbus/dbus.go). A second
// connection costs another handshake, and on systemd's private socket a
// second copy of every signal systemd emits while a job runs: together 2
// to 3 ms of a `cellguard start` of about 20 ms (docs/performance.md).
// Sharing one connection between go-systemd's two roles would break that
// contract, so the few calls cellguard makes (StartUnit, StopUnit, Reload,
// GetUnitByPID, SetUnitProperties, property reads) are made here with
// godbus, which supports calls and signals on one connection, and the job
// is followed as go-systemd follows it (JobRemoved, matched by job path,
// the waiter registered before the signal can be dispatched). go-systemd
// still provides the property type and unit-name escaping (dbus) and the
// unit file format (unit, used by internal/unitfile).
//
// Dial tries the system bus first, then systemd's private socket, as
// go-systemd's NewWithContext does: the bus forwards only the signals
// asked for, while the private socket sends every client every signal.
package systemd
