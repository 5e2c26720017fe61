//go:build !linux

package ctl

import (
	"errors"
	"net"
)

func isAddrInUse(error) bool { return false }

func isRefused(error) bool { return false }

func peerPID(*net.UnixConn) (int, error) {
	return 0, errors.New("ctl: abstract sockets need Linux")
}
