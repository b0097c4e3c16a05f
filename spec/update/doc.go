// Package update updates one instance over the BOSH agent's HTTPS API the
// way the BOSH director does, with the agent client of the bosh-agent module
// that bosh-cli v7.9.12 pins.
//
// bosh create-env never drains on an update (bosh-cli v7.9.12
// deployment/instance/instance.go UpdateJobs: stop, apply, pre-start,
// start), so the local cell drives the director's order itself: drain
// ("update", with the new spec), stop, apply, run_script pre-start, start,
// wait for job_state running, run_script post-start. The new spec is the
// instance's current one (get_state) with its jobs re-rendered from the
// changed manifest, uploaded to the agent's blobstore, and a new
// configuration hash, so the agent passes its drain scripts job_changed and
// hash_changed with the new spec in BOSH_JOB_NEXT_STATE.
package update
