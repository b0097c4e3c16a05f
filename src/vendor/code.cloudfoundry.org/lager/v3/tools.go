//go:build tools
// +build tools

package lager

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
)
