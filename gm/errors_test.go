package gm

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ethergm/ethergm/gm/link"
)

// TestOpenErrorStatuses checks, without privileges, the status, the
// wrapped cause and the message of Open's errors for each kind of failure.
func TestOpenErrorStatuses(t *testing.T) {
	_, err := ResolveUnit("egm-no-such-if", nil)
	if !errors.Is(err, NoSuchDevice) || !strings.Contains(err.Error(), `no interface "egm-no-such-if" on this host (interfaces: `) || strings.Contains(err.Error(), "route") {
		t.Errorf("missing interface: %v", err)
	}
	for _, c := range []struct {
		cause error
		want  Status
		text  string
	}{
		{&link.OpError{Op: "socket", Interface: "eth0", Err: syscall.EPERM}, PermissionDenied, "needs CAP_NET_RAW"},
		{&link.OpError{Op: "lookup", Interface: "egm-gone", Err: link.ErrNoInterface}, NoSuchDevice, `no interface "egm-gone" on this host`},
		{&link.OpError{Op: "lookup", Interface: "lo", Err: link.ErrNotEthernet}, UnsupportedDevice, "not an Ethernet interface"},
		{&link.OpError{Op: "lookup", Interface: "eth0", Err: link.ErrMTU, Detail: "500"}, UnsupportedDevice, "MTU 500"},
		{&link.OpError{Op: "lookup", Interface: "eth0", Err: link.ErrInterfaceDown}, Failure, "eth0 is down"},
		{&link.OpError{Op: "mmap", Interface: "eth0", Err: syscall.ENOMEM}, UntranslatedSystemError, "mmap"},
		{errors.New(`unit "u" lists interface eth0 twice`), InvalidParameter, "twice"},
	} {
		err := linkError(c.cause)
		if !errors.Is(err, c.want) || !errors.Is(err, c.cause) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("linkError(%v) = %v, want %v wrapping the cause, saying %q", c.cause, err, c.want, c.text)
		}
	}
	if err := linkError(&link.OpError{Op: "socket", Interface: "eth0", Err: syscall.EPERM}); !errors.Is(err, os.ErrPermission) {
		t.Errorf("a missing capability does not wrap os.ErrPermission: %v", err)
	}
	for _, id := range []int{0, 1, 3} {
		_, err := OpenUnit(&Unit{Name: "eth0", Interfaces: []string{"eth0"}}, id, "", nil)
		if !errors.Is(err, PermissionDenied) || strings.Contains(err.Error(), "Config") {
			t.Errorf("reserved port %d: %v", id, err)
		}
	}
	if _, err := OpenUnit(&Unit{Name: "eth0", Interfaces: []string{"eth0"}}, 16, "", nil); !errors.Is(err, InvalidPortNumber) {
		t.Errorf("port 16: %v", err)
	}
}

// TestOpenTokenBounds: token counts a port cannot honour are refused with
// InvalidParameter before anything is opened, naming the field and the
// bound; the bounds themselves pass.
func TestOpenTokenBounds(t *testing.T) {
	u := &Unit{Name: "egm-none", Interfaces: []string{"egm-none0"}}
	for _, c := range []struct {
		cfg  Config
		text string
	}{
		{Config{SendTokens: MaxSendTokens + 1}, "Config.SendTokens is 97; a port has 1..96 send tokens"},
		{Config{SendTokens: 128}, "Config.SendTokens is 128"},
		{Config{SendTokens: -1}, "Config.SendTokens is -1"},
		{Config{ReceiveTokens: MaxReceiveTokens + 1}, "Config.ReceiveTokens is 65537; a port has 1..65536 receive tokens"},
		{Config{ReceiveTokens: -5}, "Config.ReceiveTokens is -5"},
	} {
		for _, open := range []func() error{
			func() error { _, err := OpenUnit(u, 2, "", &c.cfg); return err },
			func() error { _, err := Open("egm-none0", 2, "", &c.cfg); return err },
		} {
			if err := open(); !errors.Is(err, InvalidParameter) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("%+v: %v, want InvalidParameter saying %q", c.cfg, err, c.text)
			}
		}
	}
	// At the bounds, Open gets as far as the (missing) interface (or,
	// without CAP_NET_RAW, the raw socket).
	cfg := &Config{SendTokens: MaxSendTokens, ReceiveTokens: MaxReceiveTokens, MapFile: t.TempDir() + "/map"}
	if _, err := OpenUnit(u, 2, "", cfg); !errors.Is(err, NoSuchDevice) && !errors.Is(err, PermissionDenied) {
		t.Errorf("tokens at their bounds: %v, want NoSuchDevice or PermissionDenied", err)
	}
}
