package perf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/escapes"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// CELLGUARD_BENCH_MOVE_ROUNDS is how many seed-000 triggers
// BenchmarkJobToMove times, quiet and again during a storm.
var moveRounds = envInt("CELLGUARD_BENCH_MOVE_ROUNDS", 30)

// BenchmarkJobToMove measures when systemd 252 moves a neighbour's
// container process (seed-000) relative to the D-Bus signals of the job
// that causes it, which is what watch's event scheduling must allow for:
// per trigger, the arrival of the trigger's UnitNew and JobRemoved on a
// bus connection of our own (subscribed to every signal systemd sends),
// and the moment the container's init leaves its recorded cpu and blkio
// cgroups, polled from /proc/<pid>/cgroup about every 0.2 ms (the move is
// somewhere between the last read that saw it inside and the first that
// saw it out). Every signal about the neighbour unit or its slice after
// JobRemoved is listed, to see whether any accompanies the move. A second
// connection of our own receives what watch receives (systemd.Conn.Watch,
// the same match rules): the trigger's JobRemoved there, and the events
// there after the move, are what watch's scheduling can go by; the
// connection subscribed to everything reads its signals later when
// systemd sends many. It runs
// the rounds once on an idle box and once while 10 other units a second
// start in the box. Times are reported, never asserted.
//
//	go test -run '^$' -bench JobToMove -benchtime 1x ./src/tests/perf
func BenchmarkJobToMove(b *testing.B) {
	sdbox.RequireRoot(b)
	b.Logf("load at start: %s", loadavg())
	box := bootPerfBox(b, "perf-move")
	ctx, kit := newKit(b, box, 30*time.Minute)
	sig := listenAll(b, box)
	sig.watch = listenAsWatch(b, box)
	n := 0
	quiet := moveTimings(b, kit, sig, &n, moveRounds)
	b.Logf("load after the quiet rounds: %s", loadavg())

	stopStorm := startStorm(ctx, kit, "movestorm", "movestorm.slice")
	storm := moveTimings(b, kit, sig, &n, moveRounds)
	stopStorm()
	b.Logf("load at end: %s", loadavg())

	for _, r := range []struct {
		name string
		ts   []moveTiming
	}{{"idle box", quiet}, {"storm of 10 unit starts/s", storm}} {
		var unitNew []int64
		first, last := map[string][]int64{}, map[string][]int64{}
		var signals, eventsAfter int
		var wFirst, wLast []int64
		for _, t := range r.ts {
			unitNew = append(unitNew, int64(t.jobRemoved.Sub(t.unitNew)))
			out := t.firstOut[movedHierarchies[0]]
			for _, h := range movedHierarchies {
				if t.firstOut[h].After(out) {
					out = t.firstOut[h]
				}
			}
			wFirst = append(wFirst, int64(out.Sub(t.wUnitNew)))
			wLast = append(wLast, int64(out.Sub(t.wJobRemoved)))
			if t.wAfter > 0 {
				eventsAfter++
			}
			for _, h := range movedHierarchies {
				first[h] = append(first[h], int64(t.firstOut[h].Sub(t.jobRemoved)))
				last[h] = append(last[h], int64(t.lastIn[h].Sub(t.jobRemoved)))
			}
			signals += len(t.after)
		}
		b.Logf("%s, %d triggers (ms, min / median / p95 / max): UnitNew -> JobRemoved %s", r.name, len(r.ts), stats4(unitNew))
		for _, h := range movedHierarchies {
			b.Logf("  %s: JobRemoved -> last read inside %s, -> first read outside %s", h, stats4(last[h]), stats4(first[h]))
		}
		b.Logf("  signals about the neighbour or its slice after JobRemoved: %d", signals)
		b.Logf("  on a connection like watch's: UnitNew -> first read outside in every hierarchy %s, JobRemoved -> it %s; rounds with an event there after the move: %d of %d",
			stats4(wFirst), stats4(wLast), eventsAfter, len(r.ts))
	}
}

// moveTiming is one trigger, times on this host's clock.
type moveTiming struct {
	unitNew, jobRemoved time.Time
	// per hierarchy: the last read of /proc/<pid>/cgroup that saw the
	// process inside, the first that saw it outside
	lastIn, firstOut map[string]time.Time
	path             []transition // where the process was, as it changed
	after            []string     // signals about the neighbour or its slice after JobRemoved
	// the trigger's UnitNew and JobRemoved on a connection like watch's,
	// and how many events came there after the move
	wUnitNew, wJobRemoved time.Time
	wAfter                int
}

type transition struct {
	at       time.Time
	h, where string
}

type signalLog struct {
	mu    sync.Mutex
	all   []timedSignal
	watch *eventLog
}

// eventLog is what a connection like watch's received.
type eventLog struct {
	mu  sync.Mutex
	all []systemd.Event
}

// listenAsWatch subscribes the way watch does (systemd.Conn.Watch).
func listenAsWatch(b *testing.B, box *sdbox.Box) *eventLog {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := systemd.Dial(ctx, systemd.Options{Address: box.SystemBusAddress})
	if err != nil {
		b.Fatal(err)
	}
	events, err := c.Watch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); c.Close() })
	l := &eventLog{}
	go func() {
		for e := range events {
			l.mu.Lock()
			l.all = append(l.all, e)
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *eventLog) since(t time.Time) []systemd.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []systemd.Event
	for _, e := range l.all {
		if !e.At.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

type timedSignal struct {
	at time.Time
	s  *godbus.Signal
}

// listenAll subscribes a connection of our own to every signal systemd
// sends on the box's bus.
func listenAll(b *testing.B, box *sdbox.Box) *signalLog {
	conn, err := godbus.Dial(box.SystemBusAddress)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	if err := conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		b.Fatal(err)
	}
	if err := conn.Hello(); err != nil {
		b.Fatal(err)
	}
	if err := conn.AddMatchSignal(godbus.WithMatchSender("org.freedesktop.systemd1")); err != nil {
		b.Fatal(err)
	}
	if err := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").Call("org.freedesktop.systemd1.Manager.Subscribe", 0).Err; err != nil {
		b.Fatal(err)
	}
	ch := make(chan *godbus.Signal, 1<<16)
	conn.Signal(ch)
	l := &signalLog{}
	go func() {
		for s := range ch {
			at := time.Now()
			l.mu.Lock()
			l.all = append(l.all, timedSignal{at, s})
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *signalLog) since(t time.Time) []timedSignal {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []timedSignal
	for _, s := range l.all {
		if !s.at.Before(t) {
			out = append(out, s)
		}
	}
	return out
}

// moveTimings makes count escapes and times each move against the
// trigger's signals.
func moveTimings(b *testing.B, kit *escapes.Kit, sig *signalLog, n *int, count int) []moveTiming {
	ctx := context.Background()
	var out []moveTiming
	for i := 0; i < count; i++ {
		*n++
		r, err := kit.Start(ctx, *n)
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		path := filepath.Join(kit.Box().Root, "proc", strconv.Itoa(r.PID), "cgroup")
		t := moveTiming{lastIn: map[string]time.Time{}, firstOut: map[string]time.Time{}}
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			last := map[string]string{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				data, err := os.ReadFile(path)
				at := time.Now()
				if err != nil {
					return
				}
				where := cgroupsOf(string(data), r)
				for _, h := range movedHierarchies {
					p := where[h]
					if p != last[h] {
						t.path = append(t.path, transition{at, h, p})
						last[h] = p
					}
					switch {
					case !t.firstOut[h].IsZero():
					case p != "garden":
						t.firstOut[h] = at
					default:
						t.lastIn[h] = at
					}
				}
				time.Sleep(200 * time.Microsecond)
			}
		}()
		begin := time.Now()
		if _, err := kit.Trigger(ctx, r); err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Second) // moves and signals after the job
		close(stop)
		<-done
		for _, s := range sig.since(begin) {
			switch {
			case s.s.Name == "org.freedesktop.systemd1.Manager.UnitNew" && len(s.s.Body) > 0 && s.s.Body[0] == r.Trigger:
				t.unitNew = s.at
			case s.s.Name == "org.freedesktop.systemd1.Manager.JobRemoved" && len(s.s.Body) > 2 && s.s.Body[2] == r.Trigger:
				t.jobRemoved = s.at
			}
		}
		moved := t.firstOut[movedHierarchies[0]]
		for _, h := range movedHierarchies {
			if t.firstOut[h].After(moved) {
				moved = t.firstOut[h]
			}
		}
		var wAfter []string
		for _, e := range sig.watch.since(begin) {
			switch {
			case e.Kind == systemd.UnitNew && e.Unit == r.Trigger:
				t.wUnitNew = e.At
			case e.Kind == systemd.JobFinished && e.Unit == r.Trigger:
				t.wJobRemoved = e.At
			}
			if !moved.IsZero() && e.At.After(moved) {
				t.wAfter++
				wAfter = append(wAfter, fmt.Sprintf("%+.1fms %s %s", ms(e.At.Sub(moved)), e.Kind, e.Unit))
			}
		}
		for _, s := range sig.since(t.jobRemoved) {
			if about(s.s, r) {
				t.after = append(t.after, fmt.Sprintf("%+.1fms %s", ms(s.at.Sub(t.jobRemoved)), describe(s.s)))
			}
		}
		if len(t.firstOut) < len(movedHierarchies) || t.unitNew.IsZero() || t.jobRemoved.IsZero() || t.wUnitNew.IsZero() || t.wJobRemoved.IsZero() {
			b.Errorf("round %d: not every move or signal seen (moved %v, UnitNew %v, JobRemoved %v, as watch %v %v)", *n, t.firstOut, t.unitNew, t.jobRemoved, t.wUnitNew, t.wJobRemoved)
		} else {
			var moves []string
			for _, h := range movedHierarchies {
				moves = append(moves, fmt.Sprintf("%s (%+.1f, %+.1f]", h, ms(t.lastIn[h].Sub(t.jobRemoved)), ms(t.firstOut[h].Sub(t.jobRemoved))))
			}
			var path []string
			for _, p := range t.path {
				path = append(path, fmt.Sprintf("%+.1f %s %s", ms(p.at.Sub(t.jobRemoved)), p.h, p.where))
			}
			b.Logf("round %d (load %s), ms from JobRemoved: UnitNew %+.1f, moves %s; path %s; after JobRemoved: %s; as watch: UnitNew %+.1f, JobRemoved %+.1f, after the move: %s",
				*n, loadavg(), ms(t.unitNew.Sub(t.jobRemoved)), strings.Join(moves, ", "), strings.Join(path, ", "), strings.Join(t.after, "; "),
				ms(t.wUnitNew.Sub(t.jobRemoved)), ms(t.wJobRemoved.Sub(t.jobRemoved)), strings.Join(wAfter, "; "))
			out = append(out, t)
		}
		kit.Remove(ctx, r)
	}
	return out
}

// movedHierarchies are what the trigger's CPUWeight and IOWeight move, as
// /proc/<pid>/cgroup names them.
var movedHierarchies = []string{"cpu", "blkio"}

// cgroupsOf maps the hierarchies of /proc/<pid>/cgroup data to where the
// container's init is: "garden" inside garden/<container>, else the path
// from the round's slice on ("/" above it).
func cgroupsOf(data string, r *escapes.Round) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(data), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 || !slices.Contains(movedHierarchies, f[1]) {
			continue
		}
		switch p := f[2]; {
		case strings.HasSuffix(p, "/garden/"+r.Container):
			out[f[1]] = "garden"
		case strings.Contains(p, "/"+r.Slice):
			out[f[1]] = p[strings.Index(p, "/"+r.Slice):]
		default:
			out[f[1]] = "/"
		}
	}
	return out
}

// about says whether s concerns round r's neighbour unit or slice.
func about(s *godbus.Signal, r *escapes.Round) bool {
	p := string(s.Path)
	for _, u := range []string{r.Unit, r.Slice} {
		if strings.HasSuffix(p, "/"+escapeLabel(u)) {
			return true
		}
		for _, v := range s.Body {
			if v == u {
				return true
			}
		}
	}
	return false
}

// escapeLabel is systemd's bus_label_escape of a unit name.
func escapeLabel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (i > 0 && c >= '0' && c <= '9') {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

func describe(s *godbus.Signal) string {
	name := s.Name[strings.LastIndexByte(s.Name, '.')+1:]
	if name == "PropertiesChanged" && len(s.Body) >= 2 {
		var keys []string
		if m, ok := s.Body[1].(map[string]godbus.Variant); ok {
			for k := range m {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return fmt.Sprintf("PropertiesChanged %s %s [%s]", s.Path, s.Body[0], strings.Join(keys, " "))
	}
	return fmt.Sprintf("%s %s %v", name, s.Path, s.Body)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// stats4 is min / median / p95 / max in ms.
func stats4(v []int64) string {
	if len(v) == 0 {
		return "-"
	}
	s := slices.Clone(v)
	slices.Sort(s)
	p := func(q float64) float64 { return ms(time.Duration(s[int(q*float64(len(s)-1)+0.5)])) }
	return fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", ms(time.Duration(s[0])), p(0.5), p(0.95), ms(time.Duration(s[len(s)-1])))
}
