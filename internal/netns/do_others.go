//go:build !linux

package netns

import (
	"errors"
	"syscall"
)

// netnsRunDir is where "ip netns" keeps its namespace files.
const netnsRunDir = "/run/netns"

func doInNS(string, func() error) error { return errors.ErrUnsupported }
func procAttr() *syscall.SysProcAttr    { return nil }
func killPid(int)                       {}
func signalGroup(int, syscall.Signal)   {}
func processAlive(int) bool             { return false }
func disableOffloads(string) error      { return errors.ErrUnsupported }
