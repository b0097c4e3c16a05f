package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/config"
)

// Bounds of drain.budget and validator.budget: from 1s, so the checks can
// run at all, to 1h, far below what an operator waits for (the agent waits
// for a drain and a pre-start forever).
const (
	minDrainBudget = time.Second
	maxDrainBudget = time.Hour
)

// durationProblems holds every duration the file sets to the one grammar,
// Go's time.ParseDuration (config.Duration), and the job's rules: a
// duration that is written must be above zero (an absent one is the
// default; a written "0s" would hide that), and drain.budget and
// validator.budget within 1s to 1h. The job's templates pass durations through as strings; this is the
// only place they are judged.
func durationProblems(raw []byte) []string {
	var file struct {
		Daemons []struct {
			Name         string          `json:"name"`
			StartTimeout json.RawMessage `json:"start_timeout"`
			StopTimeout  json.RawMessage `json:"stop_timeout"`
		} `json:"daemons"`
		Validator struct {
			RuncInitMaxAge json.RawMessage `json:"runc_init_max_age"`
			Budget         json.RawMessage `json:"budget"`
		} `json:"validator"`
		Watch struct {
			Period json.RawMessage `json:"period"`
		} `json:"watch"`
		Drain struct {
			Budget json.RawMessage `json:"budget"`
		} `json:"drain"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return []string{fmt.Sprintf("read durations: %v", err)}
	}
	var problems []string
	judge := func(key string, v json.RawMessage, min, max time.Duration) {
		if len(v) == 0 || bytes.Equal(v, []byte("null")) || bytes.Equal(v, []byte(`""`)) {
			return // absent: the default
		}
		var d config.Duration
		if err := d.UnmarshalJSON(v); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", key, err))
			return
		}
		switch {
		case d.Duration <= 0:
			problems = append(problems, fmt.Sprintf("%s %s: must be above zero (leave it out for the default)", key, v))
		case min > 0 && d.Duration < min, max > 0 && d.Duration > max:
			problems = append(problems, fmt.Sprintf("%s %s: must be from %v to %v", key, v, min, max))
		}
	}
	for i, d := range file.Daemons {
		judge(fmt.Sprintf("daemons[%d].start_timeout", i), d.StartTimeout, 0, 0)
		judge(fmt.Sprintf("daemons[%d].stop_timeout", i), d.StopTimeout, 0, 0)
	}
	judge("validator.runc_init_max_age", file.Validator.RuncInitMaxAge, 0, 0)
	judge("watch.period", file.Watch.Period, 0, 0)
	judge("drain.budget", file.Drain.Budget, minDrainBudget, maxDrainBudget)
	judge("validator.budget", file.Validator.Budget, minDrainBudget, maxDrainBudget)
	return problems
}
