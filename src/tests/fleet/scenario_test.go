package fleet

import (
	"errors"
	"strings"
	"testing"
)

// TestCheck: the verdict over a scenario's outcome. Only a scenario whose
// steps all ran and recorded every declared expectation, each holding, is ok.
func TestCheck(t *testing.T) {
	ok := func(id string) Step {
		return Step{Name: "step " + id, Expects: []string{id}, Do: func(r *Record) error { r.Expect(id, true, "fine"); return nil }}
	}
	testCases := []struct {
		name  string
		steps []Step
		want  []string // substrings, one per problem; none: the scenario holds
	}{
		{name: "all held", steps: []Step{ok("a"), ok("b")}},
		{name: "one failed", steps: []Step{ok("a"), {Name: "bad", Expects: []string{"b"}, Do: func(r *Record) error {
			r.Expect("b", false, "saw 3")
			return nil
		}}}, want: []string{"b failed: saw 3"}},
		{name: "stopped early", steps: []Step{ok("a"), {Name: "deploy", Expects: []string{"b"}, Do: func(r *Record) error {
			return errors.New("bosh deploy exited 1")
		}}, ok("c")}, want: []string{`stopped early at step "deploy": bosh deploy exited 1`,
			`step "deploy" never recorded b`, `step "step c" never recorded c`}},
		{name: "a step that forgets its expectation", steps: []Step{ok("a"), {Name: "quiet", Expects: []string{"b"},
			Do: func(r *Record) error { return nil }}}, want: []string{`step "quiet" never recorded b`}},
		{name: "nothing recorded", steps: []Step{{Name: "empty", Do: func(r *Record) error { return nil }}},
			want: []string{"no expectation was recorded"}},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			s := Scenario{Name: tc.name, Steps: tc.steps}
			got := Check(s, Run(s, nil))
			if len(got) != len(tc.want) {
				t.Fatalf("Check = %q; want %d problems %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q; want it to say %q", i, got[i], w)
				}
			}
		})
	}
}
