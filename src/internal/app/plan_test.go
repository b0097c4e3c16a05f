package app

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

func parse(t *testing.T, js string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(js), "test.json", CheckIDs())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The plan carries the config's and the flags' say: roots replaced,
// ignore lists added, fix from either, the probe only when the job allows
// it, the stat iterator only when the job allows it, D-Bus only on the
// live root.
func TestNewPlan(t *testing.T) {
	cfg := parse(t, `{"validator":{"ignore":["leaked-netns"],"runtime_roots":["/run/a"],"netns_probe":true,"bpf_stat_iterator":true,"runc_init_max_age":"7m","probe_timeout":"20s"}}`)
	p := NewPlan(cfg, Overrides{Root: "/fixture", RuntimeRoots: []string{"/run/b,/run/c"}, Ignore: []string{"devices-cgroup"}})
	if got := p.RuntimeRoots(); !slices.Equal(got, []string{"/run/b", "/run/c"}) {
		t.Errorf("roots %v: the flags replace the config's", got)
	}
	if !slices.Equal(p.Ignore, []string{"leaked-netns", "devices-cgroup"}) || p.Fix {
		t.Errorf("ignore %v fix %v", p.Ignore, p.Fix)
	}
	if !p.Spec.NetnsProbe || !p.StatIterator || p.Policy.RuncInitMaxAge.Minutes() != 7 || p.Spec.Units != nil || p.Spec.Running != nil {
		t.Errorf("spec %+v policy %+v", p.Spec, p.Policy)
	}
	if got := p.Spec.Prober.Bound(); got != 20*time.Second {
		t.Errorf("probe bound %v, want validator.probe_timeout's 20s", got)
	}
	if live := NewPlan(parse(t, `{}`), Overrides{Root: "/"}); live.Spec.Units == nil || live.Spec.Running == nil || live.Spec.NetnsProbe || live.StatIterator ||
		!slices.Equal(live.RuntimeRoots(), DefaultRuntimeRoots()) {
		t.Errorf("live plan: %+v", live.Spec)
	}
}

// config.Load refuses an unknown id in the job's lists; one given by flag
// (--ignore) is a PolicyError naming the flag, with a hint listing the ids.
func TestPlanOptionsNameTheKey(t *testing.T) {
	_, err := NewPlan(parse(t, `{}`), Overrides{Ignore: []string{"ghosts"}}).Options(validator.PreStart)
	var perr *PolicyError
	if !errors.As(err, &perr) || !strings.Contains(err.Error(), `unknown check id "ghosts"`) || !strings.Contains(perr.Hint(), "cgroup-integrity") {
		t.Errorf("--ignore ghosts: %v, want a PolicyError with the ids in the hint", err)
	}
	if _, err := config.Parse([]byte(`{"validator":{"blocking":{"drain":["cgroup-integrty"]}}}`), "test.json", CheckIDs()); err == nil ||
		!strings.Contains(err.Error(), `cgroup-integrty`) {
		t.Errorf("config with an unknown blocking id: %v, want refused by config", err)
	}
	if _, err := NewPlan(parse(t, `{"validator":{"blocking":{"drain":["cgroup-integrity"]}}}`), Overrides{}).Options(validator.Drain); err != nil {
		t.Error(err)
	}
}

// Without /proc under the root nothing can be validated.
func TestPrepareUnreadableHost(t *testing.T) {
	_, err := NewPlan(parse(t, `{}`), Overrides{Root: t.TempDir()}).Prepare(context.Background(), validator.PreStart)
	if !errors.Is(err, ErrHostUnreadable) || !strings.Contains(err.Error(), "proc") {
		t.Fatalf("err %v, want ErrHostUnreadable saying what could not be read", err)
	}
}

// watch's event scans run three checks of the scan: they ask systemd
// nothing; the period's full scan asks once.
func TestWatchRegistryReadsOnlyWhatRuns(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Mkdir("/run/systemd/system")
	p := NewPlan(parse(t, `{}`), Overrides{Root: h.Root})
	var dials atomic.Int32
	p.Spec.Units = func(context.Context) (facts.SystemdUnits, error) {
		dials.Add(1)
		return nil, errors.New("no manager in a fixture")
	}
	opts, err := p.Options(validator.Drain)
	if err != nil {
		t.Fatal(err)
	}
	registry := p.WatchRegistry(nil)
	var event []validator.Check
	for _, c := range registry(snapshot.Lazy(p.Snapshot)) {
		if slices.Contains(checks.OnEvent, c.Meta().ID) {
			event = append(event, c)
		}
	}
	validator.Run(context.Background(), event, opts)
	if n := dials.Load(); n != 0 {
		t.Fatalf("an event scan dialed systemd %d times", n)
	}
	rep := validator.Run(context.Background(), registry(snapshot.Lazy(p.Snapshot)), opts)
	if n := dials.Load(); n != 1 {
		t.Fatalf("a full scan dialed systemd %d times, want once", n)
	}
	for _, r := range rep.Results {
		if r.ID == "delegation-audit" && (r.Status != validator.Error || !strings.Contains(r.Error, "no manager in a fixture")) {
			t.Fatalf("delegation-audit without its manager: %+v", r)
		}
	}
}
