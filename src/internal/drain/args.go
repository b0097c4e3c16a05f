package drain

// Event is why the agent runs drain.
type Event string

const (
	// Shutdown: job_shutdown, on bosh stop, recreate, delete-deployment
	// and scale-in (the VM or its jobs go away).
	Shutdown Event = "shutdown"
	// Update: job_changed or job_new, before the VM's jobs are replaced.
	Update Event = "update"
	// CheckStatus: job_check_status, a dynamic drain's follow-up after it
	// printed a negative integer. cellguard never prints one; a call is
	// judged as an update.
	CheckStatus Event = "check_status"
)

// The JOB_CHANGE values bosh-agent v2.759.0 passes
// (agent/script/drain/script_params.go: NewShutdownParams, NewUpdateParams,
// ToStatusParams).
const (
	JobShutdown    = "job_shutdown"
	JobChanged     = "job_changed"
	JobNew         = "job_new"
	JobCheckStatus = "job_check_status"
)

// Call is one invocation of drain, as the agent made it.
type Call struct {
	JobChange  string   `json:"job_change"`
	HashChange string   `json:"hash_change"`
	Packages   []string `json:"updated_packages"`
	Event      Event    `json:"event"`
	// Recognized is false when JOB_CHANGE is missing or not a value the
	// agent passes (an operator's hand-run, an older agent's
	// job_unchanged): such a call is judged as an update, the stricter.
	Recognized bool `json:"recognized"`
}

// Parse reads the agent's arguments: JOB_CHANGE HASH_CHANGE
// [UPDATED_PACKAGES...].
func Parse(args []string) Call {
	var c Call
	if len(args) > 0 {
		c.JobChange = args[0]
	}
	if len(args) > 1 {
		c.HashChange = args[1]
	}
	if len(args) > 2 {
		c.Packages = append([]string(nil), args[2:]...)
	}
	c.Event, c.Recognized = Update, true
	switch c.JobChange {
	case JobShutdown:
		c.Event = Shutdown
	case JobChanged, JobNew:
	case JobCheckStatus:
		c.Event = CheckStatus
	default:
		c.Recognized = false
	}
	return c
}

// BlocksByDefault reports whether a blocking finding blocks this event
// when the operator did not ask for more: only updates block; a shutdown
// lets the VM go (the cure for a sick cell is often to recreate it).
func (e Event) BlocksByDefault() bool { return e != Shutdown }
