package link

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestOpErrorMessages(t *testing.T) {
	tests := []struct {
		name string
		err  *OpError
		want string // substring
		is   []error
	}{
		{"permission", &OpError{Op: "socket", Interface: "eth0", Err: syscall.EPERM},
			"link: opening a raw socket on eth0 needs CAP_NET_RAW: run as root or grant it with `sudo setcap cap_net_raw,cap_net_admin+ep ",
			[]error{os.ErrPermission, syscall.EPERM}},
		{"access", &OpError{Op: "socket", Interface: "eth1", Err: syscall.EACCES},
			"link: opening a raw socket on eth1 needs CAP_NET_RAW", []error{os.ErrPermission}},
		{"no interface", &OpError{Op: "lookup", Interface: "nope0", Err: ErrNoInterface},
			"link: no interface named nope0 (see `ip link`)", []error{ErrNoInterface}},
		{"down", &OpError{Op: "lookup", Interface: "eth0", Err: ErrInterfaceDown},
			"link: interface eth0 is down (`ip link set eth0 up`)", []error{ErrInterfaceDown}},
		{"mtu", &OpError{Op: "lookup", Interface: "eth0", Err: ErrMTU, Detail: "40"},
			fmt.Sprintf("link: interface eth0 has MTU 40; EtherGM needs an MTU of at least %d", MinMTU), []error{ErrMTU}},
		{"ring", &OpError{Op: "setsockopt PACKET_RX_RING", Interface: "eth0", Err: syscall.EINVAL, Detail: "64 blocks of 131072 bytes"},
			"link: eth0: setsockopt PACKET_RX_RING (64 blocks of 131072 bytes): invalid argument", []error{syscall.EINVAL}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error = tt.err
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("message %q does not contain %q", msg, tt.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message has several lines: %q", msg)
			}
			for _, target := range tt.is {
				if !errors.Is(fmt.Errorf("wrapped: %w", err), target) {
					t.Errorf("errors.Is(%v) = false", target)
				}
			}
		})
	}
}
