// Package qemuvm boots a real Ubuntu noble VM in QEMU, with Ubuntu's own
// kernel on the unified cgroup hierarchy (v2), for tests that need what a
// noble cell really runs: its kernel, its systemd, every sysctl writable.
// The image is src/tests/qemu/image.sh's, built by ci/scripts/install-deps.sh;
// src/tests/qemu/README.md says what it is and what it costs.
//
//	vm := qemuvm.Start(t, qemuvm.Options{}) // Unavailable without qemu or the image
//	res := vm.Run(t, "uname", "-r")
//
// Why this shape:
//   - QEMU's snapshot=on: the cached image is opened read-only and every
//     write goes to a throwaway qcow2 overlay QEMU keeps in the VM's own
//     temporary directory, so each boot starts pristine.
//   - Commands run through a small agent in the guest (guestagent) on a
//     virtio-serial port that QEMU connects to a unix socket in that
//     directory: no TCP port on the host, no tap device, no mount, and files
//     go in through the same channel (Put, CopyIn).
//   - KVM only where a boot under KVM has reached the agent in this process
//     (nested KVM here fails in the kernel's decompressor); TCG otherwise.
//     VM.Accel says which.
//   - No leftovers: Close kills the qemu process it started (by its pid) and
//     removes the directory; qemu dies with the test binary (Pdeathsig); on
//     SIGINT/SIGTERM every VM is closed before the process exits; a directory
//     left by a SIGKILLed test is removed by the next Boot.
//   - One process's guests at a time on the host (HostLockFile): a TCG
//     guest's clocks run on while it waits for a core, and two test
//     processes' guests side by side stretched a boot from 40-60 s to 340.
//
// Only test code imports this package.
package qemuvm
