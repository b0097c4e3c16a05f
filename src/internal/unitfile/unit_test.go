package unitfile

import (
	"errors"
	"strings"
	"testing"
)

func goodSpec() Spec {
	return Spec{
		Name:     "garden",
		Start:    []string{"/var/vcap/jobs/garden/bin/garden_ctl", "start"},
		Stop:     []string{"/var/vcap/jobs/garden/bin/garden_ctl", "stop"},
		PIDFile:  "/var/vcap/sys/run/garden/garden.pid",
		Type:     TypeExec,
		Delegate: DelegateV1,
		KillMode: KillModeNone,
	}
}

func TestRenderHasDelegationLines(t *testing.T) {
	b, err := Render(goodSpec())
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{
		"\nType=exec\n",
		"\nExecStart=/var/vcap/jobs/garden/bin/garden_ctl start\n",
		"\nExecStop=/var/vcap/jobs/garden/bin/garden_ctl stop\n",
		"\nDelegate=cpu cpuacct io blkio memory devices pids\n",
		"\nKillMode=none\n",
		"\nTasksMax=infinity\n",
		"\nRestart=no\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered unit lacks %q:\n%s", strings.TrimSpace(want), text)
		}
	}
	if strings.Contains(text, "[Install]") {
		t.Errorf("unit must not be enabled at boot (monit starts it):\n%s", text)
	}
	if strings.Contains(text, "PIDFile=") {
		t.Errorf("Type=exec must not set PIDFile=:\n%s", text)
	}
}

func TestRenderForking(t *testing.T) {
	s := goodSpec()
	s.Type = TypeForking
	s.Stop = nil
	s.KillMode = KillModeProcess
	s.Delegate = DelegateV2
	s.TimeoutStartSec, s.TimeoutStopSec = 30, 45
	b, err := Render(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=forking\n", "PIDFile=/var/vcap/sys/run/garden/garden.pid\n",
		"ExecStop=/bin/kill -TERM $MAINPID\n", "Delegate=yes\n", "KillMode=process\n",
		"TimeoutStartSec=30\n", "TimeoutStopSec=45\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("rendered unit lacks %q:\n%s", want, b)
		}
	}
	s.PIDFile = ""
	if _, err := Render(s); err == nil {
		t.Error("forking without pidfile rendered")
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	a, _ := Render(goodSpec())
	b, _ := Render(goodSpec())
	if string(a) != string(b) {
		t.Fatal("same spec rendered differently: reinstall would Reload for nothing")
	}
}

// injection is input that must never reach a unit file, in any position.
var injection = []string{
	"/bin/true\nExecStartPre=/bin/rm -rf /",
	"/bin/true\rKillMode=control-group",
	"/bin/true\x00",
	"/bin/true %n",
	"/bin/true %h/x",
	"/bin/true $HOME",
	"/bin/true ${PATH}",
	"/bin/true ; /bin/rm -rf /",
	"/bin/true 'quoted arg'",
	"/bin/true \"quoted\"",
	"/bin/true back\\slash",
	"/bin/true #comment",
	"/bin/true `id`",
	"/bin/true a|b",
	"/bin/true a&b",
	"",
	"   ",
	"/bin/tr\tue x\vy",
	"/bin/true \u00a0nbsp",
	"/bin/true é",
	"!/bin/true",
	// line breaks systemd or an editor may honour besides \n
	"/bin/true\u2028ExecStartPre=/bin/x",
	"/bin/true\u0085ExecStartPre=/bin/x",
	"/bin/true\fKillMode=mixed",
	"/bin/true\vKillMode=mixed",
	"/bin/true x\\", // a trailing backslash continues the line
	// specifiers and variables in other spellings
	"/bin/true %%",
	"/bin/true $$",
	"/bin/true x=$(id)",
	"/bin/true %{x}",
	// command separators and section headers
	"/bin/true a;b",
	"/bin/true \\;",
	"/bin/true [Service]",
	// control characters
	"/bin/true \x7f",
	"/bin/true \x1b[31m",
	"/bin/true \t",
}

// badExecutable is fine as an argument but not as the command itself:
// systemd reads -, @, +, !, : prefixes, and only clean absolute paths are
// allowed.
var badExecutable = []string{
	"-/bin/true",
	"@/bin/true argv0",
	"+/bin/true",
	":/bin/true",
	"relative/bin",
	"true",
	"/bin/../bin/true",
	"/bin//true",
	"/bin/true/",
}

func TestSplitCommandRefusesInjection(t *testing.T) {
	for _, cmd := range append(append([]string(nil), injection...), badExecutable...) {
		if words, err := SplitCommand(cmd); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want error", cmd, words)
		} else if !errors.Is(err, ErrBadCommand) {
			t.Errorf("SplitCommand(%q): error %v is not ErrBadCommand", cmd, err)
		}
	}
}

func TestRenderRefusesInjectionEverywhere(t *testing.T) {
	for _, bad := range injection {
		cases := map[string]func(*Spec){
			"start":    func(s *Spec) { s.Start = strings.Split(bad, " ") },
			"stop":     func(s *Spec) { s.Stop = strings.Split(bad, " ") },
			"stop-arg": func(s *Spec) { s.Stop = []string{"/bin/kill", bad} },
			"pidfile":  func(s *Spec) { s.PIDFile = bad },
			"name":     func(s *Spec) { s.Name = bad },
		}
		for field, mutate := range cases {
			s := goodSpec()
			mutate(&s)
			if field == "pidfile" && bad == "" {
				continue // no pidfile is valid for Type=exec
			}
			if b, err := Render(s); err == nil {
				t.Errorf("%s=%q rendered:\n%s", field, bad, b)
			}
		}
	}
}

func TestRenderRefusesBadExecutable(t *testing.T) {
	for _, bad := range badExecutable {
		for field, mutate := range map[string]func(*Spec){
			"start":   func(s *Spec) { s.Start = strings.Split(bad, " ") },
			"stop":    func(s *Spec) { s.Stop = strings.Split(bad, " ") },
			"pidfile": func(s *Spec) { s.PIDFile = bad },
		} {
			s := goodSpec()
			mutate(&s)
			if b, err := Render(s); err == nil {
				t.Errorf("%s=%q rendered:\n%s", field, bad, b)
			}
		}
	}
}

func TestValidateName(t *testing.T) {
	testCases := []struct {
		name string
		ok   bool
	}{
		{"garden", true},
		{"concourse-worker", true},
		{"containerd_1.6", true},
		{"", false},
		{"-garden", false},
		{".garden", false},
		{"garden@1", false},
		{"gar den", false},
		{"garden/../x", false},
		{"garden\\x2d", false},
		{"a:b", false},
		{strings.Repeat("a", 65), false},
		{strings.Repeat("a", 64), true},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateName(tc.name)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			}
		})
	}
}

func TestValidateUnitName(t *testing.T) {
	for _, ok := range []string{"runit.service", "monit.service", "session-1.scope", "system-getty.slice", "dev-sda.device"} {
		if err := ValidateUnitName(ok); err != nil {
			t.Errorf("ValidateUnitName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "runit", ".service", "runit.srv", "a b.service", "a/b.service", "x\n.service", strings.Repeat("a", 250) + ".service",
		"runit%i.service", "runit$X.service", "r\u00fcnit.service", "runit.service ", "runit;x.service", "runit.service\r", "[Service].service"} {
		if err := ValidateUnitName(bad); err == nil {
			t.Errorf("ValidateUnitName(%q) accepted", bad)
		}
	}
}

func TestSupervisorDropIn(t *testing.T) {
	b, err := RenderSupervisorDropIn("runit.service", DelegateV1)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[Service]\n", "Delegate=cpu cpuacct io blkio memory devices pids\n", "TasksMax=infinity\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("drop-in lacks %q:\n%s", want, b)
		}
	}
	// A supervisor's KillMode is its own business: changing it would change
	// how the supervisor itself is stopped.
	if strings.Contains(string(b), "KillMode") {
		t.Errorf("drop-in must not touch KillMode:\n%s", b)
	}
	if _, err := RenderSupervisorDropIn("runit.service\n[Service]", DelegateV1); err == nil {
		t.Error("injected unit name accepted")
	}
	if _, err := RenderSupervisorDropIn("runit.service", "cpu memory"); err == nil {
		t.Error("unknown delegate value accepted")
	}
}

func TestControllers(t *testing.T) {
	got := Controllers(DelegateV1)
	want := "cpu cpuacct io blkio memory devices pids"
	if strings.Join(got, " ") != want {
		t.Fatalf("Controllers = %q", got)
	}
	if Controllers(DelegateV2) != nil {
		t.Fatal("v2 delegate lists no explicit controllers")
	}
}
