//go:build !linux

package gatewaybin

import "syscall"

// sysProcAttr has no parent-death signal outside Linux.
func sysProcAttr() *syscall.SysProcAttr { return nil }
