// Package sdbox boots a real systemd as PID 1 of its own container
// (systemd-nspawn on a cached Debian bookworm rootfs, src/tests/harness/sdbox.sh)
// for cellguard's integration tests, and tears it down without a trace.
//
// A test package boots one box in TestMain and shares it:
//
//	var box *sdbox.Box
//
//	func TestMain(m *testing.M) { os.Exit(sdbox.Main(m, "units", &box)) }
//
//	func TestSomething(t *testing.T) {
//		sdbox.Require(t, box) // skips loudly without root, fails in CI
//		out, err := box.Exec(t.Context(), "systemctl", "is-system-running")
//		...
//	}
//
// The box's cgroups live below cellguard-sdbox-<name>-<pid> in every host
// hierarchy; its rootfs is a tmpfs overlay, so every boot starts pristine and
// nothing written into it survives Stop. A watcher process stops the box when
// the test binary dies without calling Stop (panic, SIGKILL, go test timeout).
//
// Only test code imports this package.
package sdbox
