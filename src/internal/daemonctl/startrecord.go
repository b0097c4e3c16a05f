package daemonctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
)

// startRecord is what `cellguard start` without systemd learned of the
// process its daemon's pidfile named once the start command had run: the
// facts `cellguard stop` must find again before it signals the pidfile's
// pid, so a stale pidfile (the daemon gone, its pid another process's
// now) never turns into a signal to someone else.
type startRecord struct {
	PID int `json:"pid"`
	// StartTicks is the process's /proc/<pid>/stat field 22.
	StartTicks uint64 `json:"start_ticks"`
	// BootID is /proc/sys/kernel/random/boot_id: ticks and pids count
	// from one boot.
	BootID string `json:"boot_id"`
}

// startRecordSuffix names a daemon's start record, beside its pidfile (so
// in a directory its trust already rests on, and gone with it at reboot
// where the run directory is a tmpfs, as BOSH's /var/vcap/sys/run is).
const startRecordSuffix = ".cellguard-start"

func (m *Manager) startRecordPath(d Daemon) string { return m.path(d.PIDFile) + startRecordSuffix }

func (m *Manager) writeStartRecord(d Daemon, rec startRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = safefile.WriteFileAtomic(m.startRecordPath(d), append(b, '\n'), 0o644)
	return err
}

// readStartRecord reads the record through safefile.OpenTrusted: whoever
// could write it would choose what stop signals.
func (m *Manager) readStartRecord(d Daemon) (startRecord, error) {
	var rec startRecord
	b, err := readTrusted(m.startRecordPath(d))
	if errors.Is(err, os.ErrNotExist) {
		return rec, fmt.Errorf("no start record %s: `cellguard start` did not start what the pidfile names (started otherwise, or by a cellguard that recorded none), so nothing proves it is the daemon", m.startRecordPath(d))
	}
	if err != nil {
		return rec, fmt.Errorf("start record: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil || rec.PID <= 0 || rec.StartTicks == 0 || rec.BootID == "" {
		return rec, fmt.Errorf("start record %s: not a record (%v)", m.startRecordPath(d), err)
	}
	return rec, nil
}

func (m *Manager) removeStartRecord(d Daemon) error {
	_, err := safefile.RemoveIfExists(m.startRecordPath(d))
	return err
}

// readTrusted reads a small file through safefile.OpenTrusted.
func readTrusted(path string) ([]byte, error) {
	f, err := safefile.OpenTrusted(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}

// bootID is this boot's id.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// identity is what the facts say of the pidfile's process.
type identity int

const (
	// theDaemon: the process cellguard start recorded.
	theDaemon identity = iota
	// notTheDaemon: another process holds the recorded pid now, or the
	// record is from another boot; the daemon it recorded is gone.
	notTheDaemon
	// unproven: the pidfile names another pid than the record.
	unproven
)

// judgeIdentity compares what stop found (the pidfile's pid, that
// process's start time, this boot) with what start recorded, and says why.
func judgeIdentity(rec startRecord, pid int, start uint64, boot string) (identity, string) {
	switch {
	case rec.BootID != boot:
		return notTheDaemon, "the start record is from another boot (" + rec.BootID + "), so the daemon it names is gone"
	case rec.PID != pid:
		return unproven, fmt.Sprintf("the pidfile names pid %d but cellguard start recorded pid %d, so nothing proves pid %d is the daemon", pid, rec.PID, pid)
	case rec.StartTicks != start:
		return notTheDaemon, fmt.Sprintf("pid %d started at tick %d after boot, the daemon cellguard start recorded at tick %d: another process holds its pid, the pidfile is stale",
			pid, start, rec.StartTicks)
	}
	return theDaemon, "pid " + strconv.Itoa(pid) + " is the process cellguard start recorded (same pid, start time and boot)"
}
