package drain

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// TestReadLiftRefusesALinkAnotherUserOwns: a symlink its owner may replace
// (in a sticky directory) would let that user choose the lift that lets a
// VM with escaped containers go; one not owned by root is refused, naming
// the link.
func TestReadLiftRefusesALinkAnotherUserOwns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellguard", "drain-lift.json")
	l, err := NewLift("INC-1", "alice", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLift(path, l); err != nil {
		t.Fatal(err)
	}
	link := testkit.ForeignLink(t, path)
	if _, err := ReadLift(link); !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), "symlink "+link+" ") {
		t.Fatalf("ReadLift through a link uid %d owns = %v, want ErrUntrusted naming the link", testkit.ForeignUID, err)
	}
}
