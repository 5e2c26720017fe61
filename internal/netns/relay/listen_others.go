//go:build !linux

package relay

import (
	"errors"

	"github.com/mdlayher/packet"
)

// Listen is only implemented on Linux.
func Listen(ifname string) (*packet.Conn, error) {
	return nil, errors.ErrUnsupported
}
