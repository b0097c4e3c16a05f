//go:build tools

// Package spec pins bosh-cli v7.9.12 so `go build github.com/cloudfoundry/bosh-cli/v7`
// from this module builds the same CLI the release is tested with
// (ci/scripts/bosh-cli.sh), with the versions measured in
// /work/shared/tools/boshcli.
package spec

import _ "github.com/cloudfoundry/bosh-cli/v7"
