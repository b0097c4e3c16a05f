// Package drain is BOSH's drain contract as cellguard keeps it: what the
// agent's arguments mean (Parse), what a validator run means for the VM
// (Decide), and an operator's lift of a block on one VM (Lift), which the
// agent's own contract cannot express: it runs the drain of the job already
// on the VM, so a new manifest is never read before that drain.
//
// The contract, read from bosh-agent v2.759.0 (agent/action/drain.go,
// agent/script/drain/script_params.go and concrete_script.go): the agent
// runs bin/drain of every job of the current spec with JOB_CHANGE
// HASH_CHANGE [UPDATED_PACKAGES...]; stdout must hold a signed integer
// (strconv.Atoi after TrimSpace) whatever the exit status; anything else
// fails the step with "Script did not return a signed integer". So the
// one way to block is to print no integer, and Decide says when.
//
// Nothing here prints or exits: internal/cli does, and the job's bin/drain
// wraps it so that only that one deliberate verdict can fail a BOSH step.
package drain
