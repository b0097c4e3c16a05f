package checks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// jobDir is the BOSH job, from this package's directory.
const jobDir = "../../../jobs/cellguard"

// The job refuses an unknown check id before anything runs: `cellguard
// config check` (pre-start's first step) against this registry, and
// properties_schema.json's enums on directors that validate, before any VM
// changes; the spec's descriptions tell operators the ids. The schema and
// the spec are copies that must stay (the director reads them, not Go), so
// each must name exactly the registry's ids; the config template holds none.
func TestJobKnowsExactlyTheRegistrysCheckIDs(t *testing.T) {
	want := validator.IDs(all(testDeps{}))

	// The config template holds no id list: `cellguard config check`
	// judges ids against the registry (issue 24: one home per rule).
	b, err := os.ReadFile(filepath.Join(jobDir, "templates/config/cellguard.json.erb"))
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAll(b, nil) // its comments may name a check
	for _, id := range want {
		if strings.Contains(string(code), id) {
			t.Errorf("cellguard.json.erb names check id %q: a second home of the registry's list", id)
		}
	}

	b, err = os.ReadFile(filepath.Join(jobDir, "properties_schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Cellguard struct {
				Properties struct {
					Validator struct {
						Properties struct {
							Ignore   struct{ Items struct{ Enum []string } }
							Blocking struct {
								Properties struct {
									PreStart struct{ Items struct{ Enum []string } } `json:"pre_start"`
									Drain    struct{ Items struct{ Enum []string } }
								}
							}
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	v := schema.Properties.Cellguard.Properties.Validator.Properties
	ignore := v.Ignore.Items.Enum
	if !slices.Contains(ignore, validator.IgnoreAll) {
		t.Errorf("schema validator.ignore enum lacks %q", validator.IgnoreAll)
	}
	ignore = slices.DeleteFunc(slices.Clone(ignore), func(s string) bool { return s == validator.IgnoreAll })
	same(t, "schema validator.ignore enum", ignore, want)
	same(t, "schema validator.blocking.pre_start enum", v.Blocking.Properties.PreStart.Items.Enum, want)
	same(t, "schema validator.blocking.drain enum", v.Blocking.Properties.Drain.Items.Enum, want)

	b, err = os.ReadFile(filepath.Join(jobDir, "spec"))
	if err != nil {
		t.Fatal(err)
	}
	desc := strings.Join(strings.Fields(string(b)), " ")
	if !strings.Contains(desc, "Known ids: "+strings.Join(want, ", ")+";") {
		t.Errorf("the spec's cellguard.validator.ignore description does not list the ids %s", strings.Join(want, ", "))
	}
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	got = slices.Clone(got)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want the registry's %v", what, got, want)
	}
}
