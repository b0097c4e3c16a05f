package fleet

import (
	"fmt"
	"strings"
	"time"
)

// Expectation is one claim a step checked, with what it saw.
type Expectation struct {
	ID     string `json:"id"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Record collects what a scenario's steps expected, in order.
type Record struct {
	Expectations []Expectation
	log          func(string)
}

// Expect records an expectation and says it in the story.
func (r *Record) Expect(id string, ok bool, format string, args ...any) bool {
	e := Expectation{ID: id, OK: ok, Detail: fmt.Sprintf(format, args...)}
	r.Expectations = append(r.Expectations, e)
	mark := "ok"
	if !ok {
		mark = "FAILED"
	}
	r.Say("   => expectation %s: %s - %s", id, mark, e.Detail)
	return ok
}

// Say adds a line to the story.
func (r *Record) Say(format string, args ...any) {
	if r.log != nil {
		r.log(fmt.Sprintf(format, args...))
	}
}

// Step is one thing a scenario does on the fleet. Expects lists the ids Do
// must record; Do's error stops the scenario there.
type Step struct {
	Name    string
	Expects []string
	Do      func(r *Record) error
}

// Scenario is a named list of steps, run in order until one fails.
type Scenario struct {
	Name  string
	Steps []Step
}

// Outcome is what running a scenario left: the expectations recorded and,
// when it stopped early, the step and why.
type Outcome struct {
	Scenario     string
	Expectations []Expectation
	StoppedAt    string
	StopReason   string
}

// Run runs s's steps in order; a step that returns an error ends the run.
func Run(s Scenario, log func(string)) Outcome {
	r := &Record{log: log}
	o := Outcome{Scenario: s.Name}
	for _, st := range s.Steps {
		r.Say("-- %s: %s", s.Name, st.Name)
		t0 := time.Now()
		err := st.Do(r)
		r.Say("   (step took %s)", time.Since(t0).Round(100*time.Millisecond))
		if err != nil {
			o.StoppedAt, o.StopReason = st.Name, err.Error()
			r.Say("   !! %s stopped at %q: %v", s.Name, st.Name, err)
			break
		}
	}
	o.Expectations = r.Expectations
	return o
}

// Check is the one verdict over a scenario's outcome: every expectation its
// steps declare was recorded and held, none failed, and it did not stop
// early. It returns one line per problem; none means the scenario held.
func Check(s Scenario, o Outcome) []string {
	var problems []string
	if o.StoppedAt != "" {
		problems = append(problems, fmt.Sprintf("stopped early at step %q: %s", o.StoppedAt, o.StopReason))
	}
	seen := map[string]bool{}
	for _, e := range o.Expectations {
		seen[e.ID] = true
		if !e.OK {
			problems = append(problems, fmt.Sprintf("%s failed: %s", e.ID, e.Detail))
		}
	}
	for _, st := range s.Steps {
		var missing []string
		for _, id := range st.Expects {
			if !seen[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("step %q never recorded %s", st.Name, strings.Join(missing, ", ")))
		}
	}
	if len(o.Expectations) == 0 {
		problems = append(problems, "no expectation was recorded")
	}
	return problems
}
