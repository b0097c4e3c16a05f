package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/daemonctl"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
)

// textfileHead starts every textfile validate, drain and watch write.
var textfileHead = []byte("# HELP cellguard_")

// Uninstalled is what an uninstall did: every item removed or kept, with
// why.
type Uninstalled struct {
	Items []daemonctl.PruneItem `json:"items"`
	Kept  int                   `json:"kept"`
}

// Removed is how many items went.
func (u Uninstalled) Removed() int { return len(u.Items) - u.Kept }

// Uninstall removes inv (Inventory) for everything, not for the config as
// pre-start's prune does: what nothing uses goes, what is used stays with
// why. The error joins the removals that failed; the items are all the
// same.
func (u *Uninstaller) Uninstall(ctx context.Context, inv []Installed) (Uninstalled, error) {
	items, err := u.remove(ctx, inv)
	res := Uninstalled{Items: items}
	for _, it := range items {
		if it.Action == daemonctl.Kept {
			res.Kept++
		}
	}
	u.M.m.Logger.Info("uninstalled", lager.Data{"items": len(items), "kept": res.Kept, "error": fmt.Sprint(err)})
	return res, err
}

// removeOwnFile removes p under root when it starts with head (a file
// cellguard wrote); another file is kept, and said so.
func removeOwnFile(root, p, kind string, head []byte, why string) (*daemonctl.PruneItem, error) {
	hp := hostroot.Join(root, p)
	b, err := os.ReadFile(hp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if !bytes.HasPrefix(b, head) {
		return &daemonctl.PruneItem{Path: p, Kind: kind, Action: daemonctl.Kept,
			Why: fmt.Sprintf("it does not start with %q, so cellguard did not write it", head)}, nil
	}
	if _, err := safefile.RemoveIfExists(hp); err != nil {
		return nil, err
	}
	return &daemonctl.PruneItem{Path: p, Kind: kind, Action: daemonctl.Removed, Why: why}, nil
}

func appendItem(items []daemonctl.PruneItem, it *daemonctl.PruneItem) []daemonctl.PruneItem {
	if it == nil {
		return items
	}
	return append(items, *it)
}
