package update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cloudfoundry/bosh-agent/v2/agentclient"
	"github.com/cloudfoundry/bosh-agent/v2/agentclient/applyspec"
	agenthttp "github.com/cloudfoundry/bosh-agent/v2/agentclient/http"
	"github.com/cloudfoundry/bosh-utils/crypto"
	"github.com/cloudfoundry/bosh-utils/httpclient"
	boshlog "github.com/cloudfoundry/bosh-utils/logger"
	boshsys "github.com/cloudfoundry/bosh-utils/system"
	boshuuid "github.com/cloudfoundry/bosh-utils/uuid"

	"github.com/cloudfoundry/bosh-cli/v7/blobstore"
)

// Config names the instance and the new manifest.
type Config struct {
	MbusURL  string // https://USER:PASSWORD@HOST:PORT, as the manifest's cloud_provider.mbus
	CACert   string // PEM of the CA that signed the agent's mbus certificate
	Manifest []byte // interpolated manifest with the changed properties
	Group    string // instance group name
	Releases map[string]string
	WorkDir  string
	// RunningTimeout bounds the wait for job_state running after start.
	RunningTimeout time.Duration
	Logger         boshlog.Logger
}

// Step is one call of the sequence, reported as it finishes.
type Step struct {
	Name   string
	Detail string
	Took   time.Duration
}

// StepError says which step of the update failed; Err carries the agent's
// own error text.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("%s: %v", e.Step, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// stateResponse keeps get_state's whole value, which includes the current
// apply spec (the client's GetState keeps only job_state and networks).
type stateResponse struct {
	Value     json.RawMessage `json:"value"`
	Exception *struct {
		Message string `json:"message"`
	} `json:"exception"`
}

func (r *stateResponse) Unmarshal(b []byte) error { return json.Unmarshal(b, r) }
func (r *stateResponse) ServerError() error {
	if r.Exception != nil {
		return fmt.Errorf("agent responded with error: %s", r.Exception.Message)
	}
	return nil
}

// Run updates the instance behind cfg.MbusURL and reports each step to
// report as it finishes.
func Run(ctx context.Context, cfg Config, report func(Step)) error {
	logger := cfg.Logger
	if logger == nil {
		logger = boshlog.NewLogger(boshlog.LevelNone)
	}
	client, err := connect(cfg.MbusURL, cfg.CACert, logger)
	if err != nil {
		return &StepError{"connect", err}
	}
	step := func(name string, f func() (string, error)) error {
		if err := ctx.Err(); err != nil {
			return &StepError{name, err}
		}
		t0 := time.Now()
		detail, err := f()
		if err != nil {
			return &StepError{name, err}
		}
		report(Step{Name: name, Detail: detail, Took: time.Since(t0)})
		return nil
	}

	if err := step("ping", func() (string, error) { return client.Ping() }); err != nil {
		return err
	}
	var current json.RawMessage
	var currentSpec applyspec.ApplySpec
	if err := step("get_state", func() (string, error) {
		var r stateResponse
		if err := client.AgentRequest.Send("get_state", []interface{}{}, &r); err != nil {
			return "", err
		}
		current = r.Value
		if err := json.Unmarshal(current, &currentSpec); err != nil {
			return "", fmt.Errorf("decode current spec: %w", err)
		}
		return fmt.Sprintf("%d jobs, configuration_hash %s", len(currentSpec.Job.Templates), currentSpec.ConfigurationHash), nil
	}); err != nil {
		return err
	}

	var rendered Rendered
	var next applyspec.ApplySpec
	if err := step("render", func() (string, error) {
		deployment, jobs, err := InstanceGroup(cfg.Manifest, cfg.Group)
		if err != nil {
			return "", err
		}
		rendered, err = RenderJobs(jobs, cfg.Releases, deployment, Address(currentSpec), cfg.WorkDir)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("jobs %v with the new properties, configuration_hash %s", rendered.Jobs, rendered.ConfigurationHash), nil
	}); err != nil {
		return err
	}
	if err := step("upload", func() (string, error) {
		httpClient, err := caClient(cfg.CACert)
		if err != nil {
			return "", err
		}
		fs := boshsys.NewOsFileSystem(logger)
		bs, err := blobstore.NewBlobstoreFactory(boshuuid.NewGenerator(), fs, logger).Create(cfg.MbusURL, httpClient)
		if err != nil {
			return "", err
		}
		id, err := bs.Add(rendered.Archive)
		if err != nil {
			return "", err
		}
		next, err = NextSpec(current, applyspec.RenderedTemplatesArchiveSpec{BlobstoreID: id, SHA1: rendered.SHA1}, rendered.ConfigurationHash)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("rendered templates archive as blob %s (sha1 %s)", id, rendered.SHA1), nil
	}); err != nil {
		return err
	}

	// The director's order for an instance whose VM stays.
	if err := step("drain", func() (string, error) {
		v, err := client.SendAsyncTaskMessage("drain", []interface{}{"update", next})
		if err != nil {
			return "", err
		}
		secs, ok := v.(float64)
		if !ok {
			return "", fmt.Errorf("drain returned %v, not a number", v)
		}
		if secs < 0 {
			return "", errors.New("dynamic drain (a negative value) is not driven here")
		}
		time.Sleep(time.Duration(secs) * time.Second)
		return fmt.Sprintf("update, with the new spec: returned %d", int(secs)), nil
	}); err != nil {
		return err
	}
	if err := step("stop", func() (string, error) { return "", client.Stop() }); err != nil {
		return err
	}
	if err := step("apply", func() (string, error) { return "the new spec", client.Apply(next) }); err != nil {
		return err
	}
	if err := step("run_script pre-start", func() (string, error) {
		return "", client.RunScript("pre-start", map[string]interface{}{})
	}); err != nil {
		return err
	}
	if err := step("start", func() (string, error) { return "", client.Start() }); err != nil {
		return err
	}
	if err := step("wait running", func() (string, error) { return waitRunning(ctx, client, cfg.RunningTimeout) }); err != nil {
		return err
	}
	return step("run_script post-start", func() (string, error) {
		return "", client.RunScript("post-start", map[string]interface{}{})
	})
}

// RunScript runs one job script (pre-start, post-start, ...) of every job
// on the instance, as the director's run_script does.
func RunScript(mbusURL, caCert, script string, logger boshlog.Logger) error {
	if logger == nil {
		logger = boshlog.NewLogger(boshlog.LevelNone)
	}
	client, err := connect(mbusURL, caCert, logger)
	if err != nil {
		return &StepError{"connect", err}
	}
	if err := client.RunScript(script, map[string]interface{}{}); err != nil {
		return &StepError{"run_script " + script, err}
	}
	return nil
}

func connect(mbusURL, caCert string, logger boshlog.Logger) (*agenthttp.AgentClient, error) {
	ac, err := agenthttp.NewAgentClientFactory(500*time.Millisecond, logger).NewAgentClient("cellguard-local-cell", mbusURL, caCert)
	if err != nil {
		return nil, err
	}
	client, ok := ac.(*agenthttp.AgentClient)
	if !ok {
		return nil, fmt.Errorf("unexpected agent client %T", ac)
	}
	return client, nil
}

func waitRunning(ctx context.Context, c agentclient.AgentClient, timeout time.Duration) (string, error) {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		st, err := c.GetState()
		if err == nil {
			last = st.JobState
			if st.JobState == "running" {
				return "job_state running", nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("job_state %q after %s (last error: %v)", last, timeout, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func caClient(caPEM string) (*http.Client, error) {
	pool, err := crypto.CertPoolFromPEM([]byte(caPEM))
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	return httpclient.CreateDefaultClient(pool), nil
}
