package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// ErrClosed is returned by [Host.Start] after the cluster was closed.
var ErrClosed = errors.New("netns: cluster closed")

// String returns the host's name.
func (h *Host) String() string { return h.Name }

// Command returns a command that runs name with args inside the host's
// namespace ("ip netns exec NS name args..."). The caller runs and waits
// for it; processes left running are killed by [Cluster.Close].
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// CommandContext is [Host.Command] with a context that kills the command.
func (h *Host) CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// Run runs name with args inside the host's namespace and returns its
// combined standard output and standard error. A failed command's error
// includes the host, the command line and the first line of its output.
func (h *Host) Run(name string, args ...string) (string, error) {
	out, err := h.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %s %s: %w: %s", h.Name, name, strings.Join(args, " "), err, firstLine(string(out)))
	}
	return string(out), nil
}

// Do runs fn on a locked OS thread that has entered the host's network
// namespace, and waits for it. Sockets that fn creates stay in the
// namespace after Do returns; goroutines that fn starts do not run in it.
// fn runs on a goroutine of its own: a panic or runtime.Goexit (t.FailNow)
// in fn is re-raised on the caller's goroutine. If the thread cannot return
// to its original namespace, it is left locked and dies with that
// goroutine.
func (h *Host) Do(fn func() error) error {
	if err := doInNS(h.NS, fn); err != nil {
		return fmt.Errorf("%s: %w", h.Name, err)
	}
	return nil
}

// LinkDown sets the host's interface of rail down (carrier lost on both
// sides of the veth).
func (h *Host) LinkDown(rail int) error { return h.setLink(rail, "down") }

// LinkUp sets the host's interface of rail up again and waits, bounded,
// until it is running and its switch port forwards.
func (h *Host) LinkUp(rail int) error {
	if err := h.setLink(rail, "up"); err != nil {
		return err
	}
	deadline := time.Now().Add(linkUpTimeout)
	if err := h.waitRunning(rail, deadline); err != nil {
		return err
	}
	if c := h.cluster; c.Switch != nil {
		return c.waitPorts([]string{portName(c.ID, h.Index, rail)}, deadline)
	}
	return nil
}

// Replug moves the host's interface of rail to switch sw (a bridge of the
// cluster, 0..Rails-1), as if its cable went to another switch: the
// interface stays up, only the bridge it reaches changes. Hosts moved to
// a switch of their own form a partition; moving them back heals it.
// Host.Switches follows. Not for Direct or Relay clusters.
func (h *Host) Replug(rail, sw int) error {
	c := h.cluster
	if c.Switch == nil || c.Opts.Relay != nil {
		return fmt.Errorf("%s: no switches to replug into", h.Name)
	}
	if rail < 0 || rail >= len(h.Ifaces) || sw < 0 || sw >= c.Opts.Rails {
		return fmt.Errorf("%s: no rail %d or switch %d", h.Name, rail, sw)
	}
	if _, err := ipCmd("-n", c.Switch.NS, "link", "set", portName(c.ID, h.Index, rail), "master", bridgeName(c.ID, sw)); err != nil {
		return fmt.Errorf("%s: %w", h.Name, err)
	}
	c.mu.Lock()
	h.Switches[rail] = sw
	c.mu.Unlock()
	return c.waitPorts([]string{portName(c.ID, h.Index, rail)}, time.Now().Add(linkUpTimeout))
}

// waitRunning waits until the interface of rail is running (operationally
// up), or deadline.
func (h *Host) waitRunning(rail int, deadline time.Time) error {
	for {
		var up bool
		err := h.Do(func() error {
			ifi, err := net.InterfaceByName(h.Ifaces[rail])
			if err == nil {
				up = ifi.Flags&net.FlagRunning != 0
			}
			return err
		})
		if err != nil || up {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not running", h.Name, h.Ifaces[rail])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *Host) setLink(rail int, state string) error {
	if rail < 0 || rail >= len(h.Ifaces) {
		return fmt.Errorf("%s: no rail %d", h.Name, rail)
	}
	if _, err := ipCmd("-n", h.NS, "link", "set", h.Ifaces[rail], state); err != nil {
		return fmt.Errorf("%s: %w", h.Name, err)
	}
	return nil
}

// Ping sends ICMP echo requests from the host to dst (every 100 ms) until a
// reply arrives or timeout passes. It needs no ping binary.
func (h *Host) Ping(dst netip.Addr, timeout time.Duration) error {
	var c *icmp.PacketConn
	err := h.Do(func() error {
		var err error
		c, err = icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		return err
	})
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	defer c.Close()
	id := os.Getpid() & 0xffff
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 1500)
	for seq := 1; ; seq++ {
		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("ethergm netns ping")}}
		b, err := msg.Marshal(nil)
		if err != nil {
			return fmt.Errorf("ping: %w", err)
		}
		if _, err := c.WriteTo(b, &net.IPAddr{IP: dst.AsSlice()}); err != nil && time.Now().After(deadline) {
			return fmt.Errorf("%s: ping %v: %w", h.Name, dst, err)
		}
		wait := time.Now().Add(100 * time.Millisecond)
		if wait.After(deadline) {
			wait = deadline
		}
		c.SetReadDeadline(wait)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				break
			}
			m, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
				continue
			}
			if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && from.String() == dst.String() {
				return nil
			}
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%s: ping %v: no reply within %v", h.Name, dst, timeout)
		}
	}
}
