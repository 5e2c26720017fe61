package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/nodemap"
)

// runFake starts a Driver with a fakeCore on host h (all its interfaces,
// unit "u") and stops it when the test ends.
func runFake(t *testing.T, h *netns.Host, m *nodemap.Map) (*Driver, *fakeCore) {
	t.Helper()
	fc := &fakeCore{m: m, heard: map[nodemap.MAC]int{}, railUp: map[int]bool{}}
	var d *Driver
	err := h.Do(func() (err error) {
		d, err = New(Config{
			Unit: "u", Interfaces: h.Ifaces, Host: h.Name, Level: 1,
			MapFile: filepath.Join(h.Dir, "map"), HostsFile: filepath.Join(h.Dir, "lib", "u.hosts"),
			PollInterval: 20 * time.Millisecond,
			NewCore: func(c mapper.Config, o mapper.Output) (Core, error) {
				fc.cfg, fc.out = c, o
				return fc, nil
			},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Do(d.Run) }()
	t.Cleanup(func() {
		d.Stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: Run: %v", h.Name, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: Run did not return 5 s after Stop", h.Name)
		}
		d.Close()
	})
	return d, fc
}

// clusterMap returns host self's map of c, with routes: each of self's
// interfaces reaches the peers' interfaces on the same switch.
func clusterMap(t *testing.T, c *netns.Cluster, self *netns.Host) *nodemap.Map {
	t.Helper()
	var routes []nodemap.Route
	for i, h := range c.Hosts {
		for r, sw := range h.Switches {
			for lr, lsw := range self.Switches {
				if sw == lsw {
					routes = append(routes, nodemap.Route{Node: nodemap.NodeID(i + 1), Local: nodemap.MAC(self.MACs[lr]), Peer: nodemap.MAC(h.MACs[r])})
				}
			}
		}
	}
	var entries []nodemap.Entry
	for i, h := range c.Hosts {
		e := nodemap.Entry{ID: nodemap.NodeID(i + 1), Host: h.Name}
		for _, mac := range h.MACs {
			e.MACs = append(e.MACs, nodemap.MAC(mac))
		}
		entries = append(entries, e)
	}
	m, err := nodemap.New(7, nodemap.MAC(c.Hosts[0].MACs[0]), entries, routes)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestIntegrationMapperDriver runs the Driver with a fake core on two
// hosts whose rails are crossed (host1's eth0 on the switch of host0's
// eth1): frames reach the core with the rail they arrived on, rail state
// changes reach it, the map and hosts files are written, the status is
// served, a second Driver of the unit is refused with the holder's pid, and
// a closed port is answered with PORT_CLOSED.
func TestIntegrationMapperDriver(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2, Rails: 2, HostRails: [][]int{nil, {1, 0}}})
	h0, h1 := c.Hosts[0], c.Hosts[1]
	_, f0 := runFake(t, h0, clusterMap(t, c, h0))
	runFake(t, h1, clusterMap(t, c, h1))

	// Crossed rails: host0 hears host1's eth1 on its rail 0 and host1's
	// eth0 on its rail 1; its own frames never come back.
	waitUntil(t, 5*time.Second, "host0 to hear both of host1's interfaces", func() bool {
		heard, _ := f0.snapshot()
		return len(heard) == 2
	})
	heard, _ := f0.snapshot()
	if heard[nodemap.MAC(h1.MACs[1])] != 0 || heard[nodemap.MAC(h1.MACs[0])] != 1 {
		t.Fatalf("host0 heard %v; want host1's eth1 (%s) on rail 0 and eth0 (%s) on rail 1", heard, h1.MACs[1], h1.MACs[0])
	}

	// Files. The fake core's map is installed independently of what the
	// rails hear: wait for the file rather than assume the order.
	var b []byte
	waitUntil(t, 5*time.Second, "host0's map and hosts files", func() bool {
		var err error
		b, err = os.ReadFile(filepath.Join(h0.Dir, "map"))
		_, herr := os.Stat(filepath.Join(h0.Dir, "lib", "u.hosts"))
		return err == nil && herr == nil
	})
	if got, err := nodemap.Parse(b); err != nil || got.Version != 7 || got.Len() != 2 {
		t.Fatalf("map file: %v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(h0.Dir, "lib", "u.hosts")); err != nil {
		t.Fatalf("hosts file: %v", err)
	}

	// Status on the ctl name, and the second daemon refused.
	var st Status
	err := h0.Do(func() error {
		_, err := ctl.Query(ctl.MapperName("u"), &st)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.Unit != "u" || len(st.Interfaces) != 2 || st.MapVersion != 7 || st.Host != "host0" {
		t.Fatalf("status %+v", st)
	}
	err = h0.Do(func() error {
		_, err := New(Config{Unit: "u", Interfaces: h0.Ifaces, Host: "host0"})
		return err
	})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "pid ") {
		t.Fatalf("second driver: %v; want ErrBusy naming the pid", err)
	}

	// Rail state: down and up again.
	if err := h0.LinkDown(1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "rail 1 down", func() bool {
		_, up := f0.snapshot()
		v, ok := up[1]
		return ok && !v
	})
	if err := h0.LinkUp(1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "rail 1 up", func() bool {
		_, up := f0.snapshot()
		return up[1]
	})

	// The interface disappears (renamed away) and comes back: its link
	// is closed, then opened again.
	mode := func() string {
		var st Status
		_ = h0.Do(func() error { _, err := ctl.Query(ctl.MapperName("u"), &st); return err })
		if len(st.Interfaces) < 2 {
			return "?"
		}
		return st.Interfaces[1].Mode
	}
	if err := h0.LinkDown(1); err != nil {
		t.Fatal(err)
	}
	if _, err := h0.Run("ip", "link", "set", "eth1", "name", "gone1"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the link of the vanished interface to close", func() bool { return mode() == "" })
	if _, up := f0.snapshot(); up[1] {
		t.Fatal("rail 1 still up without its interface")
	}
	if _, err := h0.Run("ip", "link", "set", "gone1", "name", "eth1"); err != nil {
		t.Fatal(err)
	}
	if err := h0.LinkUp(1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "rail 1 up again with a new link", func() bool {
		_, up := f0.snapshot()
		return up[1] && mode() != ""
	})

	// A port of host0 sends to port 5 of host1, where only the driver
	// runs: PORT_CLOSED at once. host1's driver opens its closed-ports
	// links once it has a node id: wait for that.
	waitUntil(t, 10*time.Second, "host1 to answer for closed ports", func() bool {
		var st Status
		_ = h1.Do(func() error { _, err := ctl.Query(ctl.MapperName("u"), &st); return err })
		return len(st.Interfaces) == 2 && st.Interfaces[0].ClosedPorts&(1<<5) != 0 && st.Interfaces[1].ClosedPorts&(1<<5) != 0
	})
	elapsed := sendClosed(t, h0, filepath.Join(h0.Dir, "map"), 2, 5)
	// The status proves the driver answered (unanswered, the send would
	// end in a timeout); how fast is a benchmark's question, not a test's.
	t.Logf("SendTargetPortClosed after %v", elapsed)
}

// sendClosed opens port 2 of h's unit (its eth0 interface list) and sends
// to port of node; it returns how long the send took to fail with
// SendTargetPortClosed, and fails the test on any other outcome.
func sendClosed(t *testing.T, h *netns.Host, mapFile string, node nodemap.NodeID, port int) time.Duration {
	t.Helper()
	var p *gm.Port
	cfg := &gm.Config{Host: h.Name, StateDir: filepath.Join(h.Dir, "ports"), MapFile: mapFile}
	err := h.Do(func() (err error) {
		p, err = gm.Open(strings.Join(h.Ifaces, ","), 2, "sender", cfg)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var (
		mu  sync.Mutex
		got []gm.Status
	)
	cb := func(_ *gm.Port, _ any, st gm.Status) {
		mu.Lock()
		got = append(got, st)
		mu.Unlock()
	}
	start := time.Now()
	if err := p.SendWithCallback(make([]byte, 64), 7, 64, gm.LowPriority, node, port, cb, nil); err != nil {
		t.Fatal(err)
	}
	for time.Since(start) < 10*time.Second {
		e := p.Receive()
		if e.Type != gm.NoRecvEvent {
			p.Unknown(e)
		}
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	el := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != gm.SendTargetPortClosed {
		t.Fatalf("send completions %v after %v; want one SendTargetPortClosed", got, el)
	}
	return el
}
