package checks

import (
	"fmt"
	"slices"

	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// inPlace audits a unit another release installs and cellguard delegates
// in place (delegate_units): what its Delegate= leaves to systemd. Not
// loaded yet is not a failure: such a unit is installed when monit starts
// its job, after pre-start, and the drop-in applies then.
func (au audit) inPlace(r facts.UnitRead) validator.Finding {
	name, u := r.Name, r.Unit
	if r.Err != nil {
		return validator.Finding{Subject: name, Status: validator.Error, Detail: r.Err.Error(), Data: map[string]string{"unit": name}}
	}
	if u.LoadState != "loaded" {
		return validator.Finding{Subject: name, Status: validator.Skip,
			Detail: fmt.Sprintf("delegate_units names %s, which systemd does not know yet (LoadState=%s); its drop-in applies when its release installs it", name, u.LoadState),
			Data:   map[string]string{"unit": name, "load_state": u.LoadState}}
	}
	st, why, data := au.judge(u)
	data["delegated_in_place"] = "true"
	detail := why
	if st == validator.Fail {
		detail = why + "; run `cellguard unit delegate " + name + "` (pre-start does, for each of cellguard.delegate_units)"
		if au.v1 && slices.Contains(u.DelegateControllers, "io") && !slices.Contains(u.DelegateControllers, "blkio") {
			// What Delegate=yes means on v1 (DelegateControllers cpu cpuset
			// io memory pids): measured on systemd 252, a unit with
			// IOWeight= in the same slice moved the delegated child's blkio.
			detail += ". With Delegate=yes systemd 252 still moves v1 blkio when another unit in its slice sets IOWeight= (measured)"
		}
	}
	return validator.Finding{Subject: name, Status: st, Detail: detail, Data: data}
}
