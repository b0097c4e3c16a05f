package fleet

import (
	"context"
	"slices"
	"testing"
)

// TestDrainHealLanes: drain's heal is off exactly where a lane's story is
// an operator who turned it off (the rollout lane's blocked rollouts and
// way out, seed 000 as measured), and each lane's copy of the fleet, whose
// runtime configs set cellguard.drain.heal, carries it.
func TestDrainHealLanes(t *testing.T) {
	wantOff := []string{"fleet", "fleet-garden-seed"}
	f := &fleet{t: t, story: func(string) {}, ctx: context.Background()}
	for _, name := range shapeOrder {
		plan, _ := pick{all: true}.plan(shapes[name])
		runs := f.laneRuns(context.Background(), plan)
		for i, l := range plan {
			if off := slices.Contains(wantOff, l.dep); l.healOff != off || runs[i].f.healOff != off {
				t.Errorf("%s: lane %s: healOff %t, its fleet's %t; want %t", name, l.dep, l.healOff, runs[i].f.healOff, off)
			}
		}
	}
}

// TestParseContainerProcs: a process is out of its container in each
// hierarchy the trigger moves that does not hold it below garden/<id>;
// hierarchies the trigger leaves alone and the systemd ones never count.
func TestParseContainerProcs(t *testing.T) {
	out := "r1 1372 blkio:/ cpu,cpuacct:/ memory:/system.slice/runit.service/garden/r1 name=systemd:/system.slice/runit.service :/ misc:/ \n" +
		"d1 1400 blkio:/system.slice/runit.service/garden/d1 cpu,cpuacct:/system.slice/runit.service/garden/d1 pids:/system.slice/runit.service/garden/d1 \n"
	got := parseContainerProcs(out)
	if len(got) != 2 || got[0].id != "r1" || got[0].pid != "1372" || got[1].id != "d1" || got[1].pid != "1400" {
		t.Fatalf("parsed %+v", got)
	}
	if want := []string{"blkio:/", "cpu:/", "cpuacct:/"}; !slices.Equal(got[0].out, want) {
		t.Errorf("r1 out in %v, want %v", got[0].out, want)
	}
	if len(got[1].out) != 0 {
		t.Errorf("d1 out in %v, want nothing", got[1].out)
	}
}

// TestLastDrain: the last drain's decision and only its heal lines, from
// drain.log as bin/drain writes it (its own lines and stderr among lager's).
func TestLastDrain(t *testing.T) {
	log := `{"message":"cellguard.drain.starting","data":{}}
{"message":"cellguard.drain.heal","data":{"pid":1,"hierarchy":"blkio","result":"failed","why":"x"}}
{"message":"cellguard.drain.decided","data":{"outcome":"blocked","reason":"r1"}}
2026-12-06T11:00:00Z bin/drain: called: job_changed hash_changed
{"message":"cellguard.drain.starting","data":{}}
{"message":"cellguard.drain.heal","data":{"pid":7,"hierarchy":"cpu,cpuacct","result":"moved","why":""}}
cellguard drain job_changed hash_changed: healed: no blocking finding left
{"message":"cellguard.drain.decided","data":{"outcome":"healed","reason":"no blocking finding left"}}
`
	d, heals := lastDrain(log)
	if d == nil || d.Data.Outcome != "healed" || len(heals) != 1 || heals[0].Data.PID != 7 || heals[0].Data.Result != "moved" {
		t.Errorf("last drain: %+v, heals %+v", d, heals)
	}
	if d, heals := lastDrain("no drain here\n"); d != nil || heals != nil {
		t.Errorf("no drain: %+v %+v", d, heals)
	}
}
