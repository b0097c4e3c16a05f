//go:build !go1.25
// +build !go1.25

package main

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo/automaxprocs"
)
