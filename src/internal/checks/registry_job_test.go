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

// The job refuses an unknown check id before anything runs: the config
// template at render time (cg_known_check_ids), properties_schema.json's
// enums on directors that validate, and the spec's descriptions tell
// operators the ids. Each must name exactly the registry's ids, so a new
// check can be named in a manifest and a removed one cannot.
func TestJobKnowsExactlyTheRegistrysCheckIDs(t *testing.T) {
	want := validator.IDs(All(Deps{}))

	b, err := os.ReadFile(filepath.Join(jobDir, "templates/config/cellguard.json.erb"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)def cg_known_check_ids\s*\n\s*%w\[([^\]]*)\]`).FindSubmatch(b)
	if m == nil {
		t.Fatal("cellguard.json.erb: no cg_known_check_ids %w[...] list")
	}
	same(t, "cellguard.json.erb cg_known_check_ids", strings.Fields(string(m[1])), want)

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
