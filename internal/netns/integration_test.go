package netns_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
	"github.com/mdlayher/packet"
)

func TestIntegrationCluster(t *testing.T) {
	t.Parallel()
	c := netns.New(t, netns.Options{Hosts: 3, Rails: 2, MTU: 9000})
	if len(c.Hosts) != 3 || c.Switch == nil || len(c.Switch.Ifaces) != 2 {
		t.Fatalf("got %d hosts, switch %v", len(c.Hosts), c.Switch)
	}
	for _, h := range c.Hosts {
		if h.Dir == "" {
			t.Errorf("%s: no Dir", h)
		} else if st, err := os.Stat(h.Dir); err != nil || !st.IsDir() {
			t.Errorf("%s: Dir %s: %v", h, h.Dir, err)
		}
		err := h.Do(func() error {
			ifs, err := net.Interfaces()
			if err != nil {
				return err
			}
			byName := map[string]net.Interface{}
			for _, ifi := range ifs {
				byName[ifi.Name] = ifi
			}
			if len(ifs) != 3 { // lo, eth0, eth1
				t.Errorf("%s: %d interfaces, want 3: %v", h, len(ifs), ifs)
			}
			for r, name := range h.Ifaces {
				ifi, ok := byName[name]
				switch {
				case !ok:
					t.Errorf("%s: no %s", h, name)
				case !bytes.Equal(ifi.HardwareAddr, h.MACs[r]):
					t.Errorf("%s %s: MAC %v, want %v", h, name, ifi.HardwareAddr, h.MACs[r])
				case ifi.MTU != 9000:
					t.Errorf("%s %s: MTU %d", h, name, ifi.MTU)
				case ifi.Flags&net.FlagRunning == 0:
					t.Errorf("%s %s: not running", h, name)
				}
				if h.MACs[r][0] != 0x02 || int(h.MACs[r][4]) != h.Index || int(h.MACs[r][5]) != r {
					t.Errorf("%s %s: MAC %v does not follow 02:id:id:id:host:rail", h, name, h.MACs[r])
				}
				addrs, _ := ifi.Addrs()
				if len(addrs) != 1 || !strings.HasPrefix(addrs[0].String(), h.Addrs[r].String()+"/24") {
					t.Errorf("%s %s: addrs %v, want %v/24", h, name, addrs, h.Addrs[r])
				}
			}
			if lo, ok := byName["lo"]; !ok || lo.Flags&net.FlagUp == 0 {
				t.Errorf("%s: lo not up", h)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Every MAC is unique.
	seen := map[string]bool{}
	for _, h := range c.Hosts {
		for _, m := range h.MACs {
			if seen[m.String()] {
				t.Errorf("duplicate MAC %v", m)
			}
			seen[m.String()] = true
		}
	}
	h0, h1, h2 := c.Hosts[0], c.Hosts[1], c.Hosts[2]
	for r := range 2 {
		for _, p := range [][2]*netns.Host{{h0, h1}, {h1, h2}, {h2, h0}} {
			if err := p[0].Ping(p[1].Addrs[r], 5*time.Second); err != nil {
				t.Errorf("rail %d: %v", r, err)
			}
		}
	}
	if err := h1.LinkDown(1); err != nil {
		t.Fatal(err)
	}
	if err := h0.Ping(h1.Addrs[1], 300*time.Millisecond); err == nil {
		t.Errorf("ping %s over rail 1 works with the link down", h1)
	}
	if err := h0.Ping(h1.Addrs[0], 2*time.Second); err != nil {
		t.Errorf("rail 0 broken by rail 1 down: %v", err)
	}
	if err := h1.LinkUp(1); err != nil {
		t.Fatal(err)
	}
	if err := h0.Ping(h1.Addrs[1], 5*time.Second); err != nil {
		t.Errorf("after LinkUp: %v", err)
	}
}

func TestIntegrationDirect(t *testing.T) {
	t.Parallel()
	c := netns.New(t, netns.Options{Direct: true})
	if c.Switch != nil || len(c.Hosts) != 2 {
		t.Fatalf("direct: switch %v, %d hosts", c.Switch, len(c.Hosts))
	}
	if err := c.Hosts[0].Ping(c.Hosts[1].Addrs[0], 5*time.Second); err != nil {
		t.Fatal(err)
	}
	out, err := c.Hosts[1].Run("ip", "-o", "link", "show", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, c.Hosts[1].MACs[0].String()) {
		t.Errorf("host1 eth0: %q, want MAC %v", out, c.Hosts[1].MACs[0])
	}
}

func TestIntegrationDo(t *testing.T) {
	t.Parallel()
	c := netns.New(t, netns.Options{Hosts: 2})
	h0, h1 := c.Hosts[0], c.Hosts[1]

	rootIfs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	// A packet socket made inside Do stays in host1's namespace.
	var rx *packet.Conn
	err = h1.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		rx, err = packet.Listen(ifi, packet.Raw, 0x88B5, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	var tx *packet.Conn
	err = h0.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		if !bytes.Equal(ifi.HardwareAddr, h0.MACs[0]) {
			t.Errorf("eth0 in Do: %v, want %v", ifi.HardwareAddr, h0.MACs[0])
		}
		tx, err = packet.Listen(ifi, packet.Raw, 0x88B5, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	// Back outside: this goroutine's namespace is unchanged.
	after, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(rootIfs) {
		t.Errorf("interfaces outside Do changed: %d -> %d", len(rootIfs), len(after))
	}

	frame := make([]byte, 60)
	copy(frame, h1.MACs[0])
	copy(frame[6:], h0.MACs[0])
	frame[12], frame[13] = 0x88, 0xB5
	copy(frame[14:], "netns Do test")
	if _, err := tx.WriteTo(frame, &packet.Addr{HardwareAddr: h1.MACs[0]}); err != nil {
		t.Fatal(err)
	}
	rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := rx.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf[:n], frame) {
		t.Errorf("received %x, want %x", buf[:n], frame)
	}

	// Errors, panics and Goexit of fn reach the caller.
	errTest := errors.New("test")
	if err := h0.Do(func() error { return errTest }); !errors.Is(err, errTest) {
		t.Errorf("Do error = %v", err)
	}
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recover() = %v", v)
			}
		}()
		h0.Do(func() error { panic("boom") })
	}()
	// Many calls in a row leave no thread in the wrong namespace.
	for range 50 {
		if err := h0.Do(func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	after, _ = net.Interfaces()
	if len(after) != len(rootIfs) {
		t.Errorf("interfaces outside Do changed after many Do calls")
	}
}

func TestIntegrationStartStop(t *testing.T) {
	t.Parallel()
	c := netns.New(t, netns.Options{Hosts: 1})
	h := c.Hosts[0]

	out, err := h.Run("ip", "-o", "addr", "show", "dev", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, h.Addrs[0].String()) {
		t.Errorf("Run: %q lacks %v", out, h.Addrs[0])
	}
	if _, err := h.Run("false"); err == nil {
		t.Error("Run(false) succeeded")
	}

	// A daemon that logs, and exits on SIGTERM.
	p, err := h.Start("sh", "-c", `trap 'echo stopping; exit 0' TERM; echo started; ip -o link show eth0; while :; do sleep 0.05; done`)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(p.Output(), "eth0") }, "daemon output")
	if !strings.Contains(p.Output(), h.MACs[0].String()) {
		t.Errorf("daemon does not see the host's eth0: %q", p.Output())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if !strings.Contains(p.Output(), "stopping") {
		t.Errorf("output after Stop: %q", p.Output())
	}

	// A daemon that ignores SIGTERM is killed after the grace period.
	p2, err := h.Start("sh", "-c", `trap '' TERM; echo up; while :; do sleep 0.05; done`)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(p2.Output(), "up") }, "second daemon")
	p2.StopGrace = 200 * time.Millisecond
	if err := p2.Stop(); !errors.Is(err, netns.ErrKilled) {
		t.Errorf("Stop of a TERM-ignoring daemon = %v, want ErrKilled", err)
	}

	// A process that exits by itself reports its status.
	p3, err := h.Start("sh", "-c", "exit 3")
	if err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := p3.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("Wait = %v, want exit status 3", err)
	}

	// A daemon left running is killed by Close.
	p4, err := h.Start("sleep", "1000")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p4.Done():
	default:
		t.Error("daemon survived Close")
	}
	if _, err := h.Start("true"); !errors.Is(err, netns.ErrClosed) {
		t.Errorf("Start after Close = %v", err)
	}
}

func TestIntegrationCleanup(t *testing.T) {
	t.Parallel()
	c := netns.New(t, netns.Options{Hosts: 2, Rails: 2})
	id := c.ID
	// A process started with Command (not Start) is killed too.
	cmd := c.Hosts[0].Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	dir := c.Dir
	if n := countRun(t, id); n == 0 {
		t.Fatalf("run %s not visible before Close", id)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := countRun(t, id); n != 0 {
		t.Errorf("%d names of run %s left after Close", n, id)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("process started with Command survived Close")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster dir %s: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join("/run/ethergm/netns", id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file of %s: %v", id, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// countRun counts namespaces and root-namespace links whose name has the
// run id.
func countRun(t *testing.T, id string) int {
	t.Helper()
	var n int
	for _, args := range [][]string{{"netns", "list"}, {"-o", "link", "show"}} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
		n += strings.Count(string(out), netns.Prefix+id)
	}
	return n
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
