//go:build tools

// Package spec pins the BOSH components the release is tested with, so that
// `go build` from this module builds exactly them:
//   - bosh-cli v7.9.12 (ci/scripts/bosh-cli.sh), with the versions measured
//     in ../shared/tools/boshcli beside the repository;
//   - bosh-agent v2.759.0, the version bosh-cli v7.9.12 requires
//     (ci/scripts/bosh-agent.sh builds .../bosh-agent/v2/main for the local
//     stemcell, src/tests/bosh/stemcell).
//
// Neither enters the root go.mod: the product's vendored module stays free
// of them.
package spec

import (
	_ "github.com/cloudfoundry/bosh-agent/v2/main"
	_ "github.com/cloudfoundry/bosh-cli/v7"
)
