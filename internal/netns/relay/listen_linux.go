package relay

import (
	"fmt"
	"net"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// sockBuf is the receive and send buffer size of relay sockets.
const sockBuf = 4 << 20

// Listen opens a raw packet socket on interface ifname of the calling
// thread's network namespace that receives every incoming frame (ETH_P_ALL,
// promiscuous) but not the frames sent on it, with large socket buffers.
func Listen(ifname string) (*packet.Conn, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, nil)
	if err != nil {
		return nil, fmt.Errorf("relay: listen %s: %w", ifname, err)
	}
	if err := setup(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("relay: %s: %w", ifname, err)
	}
	return c, nil
}

func setup(c *packet.Conn) error {
	if err := c.SetPromiscuous(true); err != nil {
		return err
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); serr != nil {
			serr = fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", serr)
			return
		}
		// Best effort: the *FORCE variants need CAP_NET_ADMIN.
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, sockBuf) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, sockBuf)
		}
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sockBuf) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, sockBuf)
		}
	})
	if err != nil {
		return err
	}
	return serr
}
