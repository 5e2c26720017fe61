package gm_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
)

// TestIntegrationOpenBeforeMap opens ports on two hosts before any node
// map exists, then writes a map that lists only one of them, then the
// whole map: until a map lists its host a port has node id 0 and its
// sends fail at once with NodeIDNotYetSet; then the ports exchange
// messages. With one rail and with two.
func TestIntegrationOpenBeforeMap(t *testing.T) {
	for _, rails := range []int{1, 2} {
		t.Run(fmt.Sprintf("rails%d", rails), func(t *testing.T) { openBeforeMap(t, rails) })
	}
}

func openBeforeMap(t *testing.T, rails int) {
	c := netns.New(t, netns.Options{Hosts: 2, Rails: rails})
	mapPath := filepath.Join(t.TempDir(), "map")
	open := func(h *netns.Host, id int) *gm.Port {
		var p *gm.Port
		if err := h.Do(func() (err error) {
			p, err = gm.Open(strings.Join(h.Ifaces, ","), id, "test", testConfig(h, mapPath))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		dumpOnFailure(t, h.Name, id, p)
		return p
	}
	a, b := open(c.Hosts[0], 2), open(c.Hosts[1], 4)
	for _, p := range []*gm.Port{a, b} {
		if id := p.NodeID(); id != gm.NoSuchNodeID {
			t.Fatalf("node id %d before any map", id)
		}
	}
	size := gm.MinSizeForLength(16)
	start := time.Now()
	err := a.SendWithCallback([]byte("early"), size, 5, gm.LowPriority, 2, 4, nil, nil)
	if !errors.Is(err, gm.NodeIDNotYetSet) || !strings.Contains(err.Error(), mapPath) {
		t.Fatalf("send before the map: %v, want NodeIDNotYetSet naming %s", err, mapPath)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("send before the map took %v", d)
	}
	if e := a.Receive(); e.Type != gm.NoRecvEvent {
		t.Fatalf("event %v before the map", e.Type)
	}

	// A map without host0: host1 gets its id, host0 still waits.
	entries := gmmap.Entries(c)
	m, err := gm.NewNodeMap(entries[1:])
	if err != nil {
		t.Fatal(err)
	}
	writeMapFile(t, mapPath, m)
	waitFor(t, 10*time.Second, "host1's node id", func() bool { return b.NodeID() == 2 })
	time.Sleep(100 * time.Millisecond) // two map polls of host0's port
	if id := a.NodeID(); id != gm.NoSuchNodeID {
		t.Fatalf("host0 has node id %d from a map without it", id)
	}
	if err := a.SendWithCallback([]byte("early"), size, 5, gm.LowPriority, 2, 4, nil, nil); !errors.Is(err, gm.NodeIDNotYetSet) {
		t.Fatalf("send from an unmapped host: %v", err)
	}

	// The whole map: both ports work.
	m, err = gm.NewNodeMap(entries)
	if err != nil {
		t.Fatal(err)
	}
	writeMapFile(t, mapPath, m)
	waitFor(t, 10*time.Second, "host0's node id", func() bool { return a.NodeID() == 1 })
	waitFor(t, 10*time.Second, "the whole map at host1", func() bool { return b.NodeMap().Len() == 2 })
	for _, p := range []*gm.Port{a, b} {
		if err := p.ProvideReceiveBuffer(make([]byte, 16), size, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	comp := newCompletions()
	if err := a.SendWithCallback([]byte("hello"), size, 5, gm.LowPriority, 2, 4, comp.cb, 1); err != nil {
		t.Fatal(err)
	}
	e := recvEvent(t, b)
	if string(e.Message) != "hello" || e.SenderNode != 1 || e.SenderPort != 2 {
		t.Fatalf("got %q from node %d port %d", e.Message, e.SenderNode, e.SenderPort)
	}
	if err := b.SendWithCallback([]byte("back"), size, 4, gm.LowPriority, e.SenderNode, e.SenderPort, comp.cb, 2); err != nil {
		t.Fatal(err)
	}
	if e := recvEvent(t, a); string(e.Message) != "back" || e.SenderNode != 2 {
		t.Fatalf("got %q from node %d", e.Message, e.SenderNode)
	}
	if rails > 1 {
		// A message of several chunks uses both rails.
		big := pattern(200<<10, 7)
		bsize := gm.MinSizeForLength(len(big))
		if err := b.ProvideReceiveBuffer(make([]byte, len(big)), bsize, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
		if err := a.SendWithCallback(big, bsize, len(big), gm.LowPriority, 2, 4, nil, nil); err != nil {
			t.Fatal(err)
		}
		if e := recvEvent(t, b); !bytes.Equal(e.Message, big) {
			t.Fatalf("200 KiB message differs")
		}
		for _, r := range a.RailStats() {
			if r.Link.TxFrames < 10 {
				t.Fatalf("rail %s sent %d frames", r.Interface, r.Link.TxFrames)
			}
		}
	}
	waitFor(t, 10*time.Second, "completions", func() bool {
		a.Unknown(a.Receive())
		b.Unknown(b.Receive())
		return len(comp.snapshot()) == 2
	})
	expect(t, comp.snapshot(), completion{1, gm.Success}, completion{2, gm.Success})
}

// recvEvent polls p until a receive event arrives (other events go to
// Unknown) and returns it.
func recvEvent(t *testing.T, p *gm.Port) *gm.Event {
	t.Helper()
	var e *gm.Event
	waitFor(t, 10*time.Second, "a message", func() bool {
		e = p.Receive()
		if e.Type.IsRecv() {
			return true
		}
		p.Unknown(e)
		return false
	})
	return e
}

// writeMapFile writes m to path atomically.
func writeMapFile(t *testing.T, path string, m *gm.NodeMap) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, m.Format(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationClosedPortEvent checks that the receive calls on a closed
// port return PortClosedEvent, also to a BlockingReceive that is asleep
// when the port closes.
func TestIntegrationClosedPortEvent(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 1})
	h := c.Hosts[0]
	p := openPort(t, h, 2, testConfig(h, writeMap(t, c)))
	got := make(chan gm.EventType, 1)
	go func() { got <- p.BlockingReceive().Type }()
	time.Sleep(20 * time.Millisecond) // past the spin: asleep in the kernel
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case typ := <-got:
		if typ != gm.PortClosedEvent {
			t.Fatalf("BlockingReceive during Close: %v, want %v", typ, gm.PortClosedEvent)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("BlockingReceive did not return after Close")
	}
	for name, recv := range map[string]func() *gm.Event{
		"Receive": p.Receive, "BlockingReceive": p.BlockingReceive, "BlockingReceiveNoSpin": p.BlockingReceiveNoSpin,
	} {
		if typ := recv().Type; typ != gm.PortClosedEvent {
			t.Fatalf("%s on a closed port: %v", name, typ)
		}
	}
	if s := gm.PortClosedEvent.String(); s != "GM_PORT_CLOSED_EVENT" {
		t.Fatalf("String() = %q", s)
	}
	p.Unknown(p.Receive()) // ignored
}

// TestIntegrationHostNameFromMap: a host found in the map by its MAC
// address (its configured name is not in the map) takes the map's name.
func TestIntegrationHostNameFromMap(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	entries := gmmap.Entries(c)
	entries[0].Host = "mapped-a"
	m, err := gm.NewNodeMap(entries)
	if err != nil {
		t.Fatal(err)
	}
	mapPath := filepath.Join(t.TempDir(), "map")
	writeMapFile(t, mapPath, m)
	cfg := testConfig(c.Hosts[0], mapPath)
	cfg.Host = "kernel-name"
	p := openPort(t, c.Hosts[0], 2, cfg)
	if p.NodeID() != 1 || p.HostName() != "mapped-a" {
		t.Fatalf("node %d host %q, want 1 and the map's name mapped-a", p.NodeID(), p.HostName())
	}
	if pi := p.Info(); pi.Host != "mapped-a" || pi.NodeID != 1 {
		t.Fatalf("Info: host %q node %d", pi.Host, pi.NodeID)
	}
	// A renamed entry is followed.
	entries[0].Host = "renamed-a"
	m, err = gm.NewNodeMap(entries)
	if err != nil {
		t.Fatal(err)
	}
	writeMapFile(t, mapPath, m)
	waitFor(t, 10*time.Second, "the new name", func() bool { return p.HostName() == "renamed-a" })
	if id, err := p.HostNameToNodeID("renamed-a"); err != nil || id != 1 {
		t.Fatalf("HostNameToNodeID(renamed-a) = %d, %v", id, err)
	}
}

// TestIntegrationOpenErrors checks the status and message of Open's
// errors: a missing interface, a malformed map, reserved ports.
func TestIntegrationOpenErrors(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 1})
	h := c.Hosts[0]
	cfg := testConfig(h, writeMap(t, c))
	open := func(unit string, id int, cfg *gm.Config) error {
		return h.Do(func() error {
			p, err := gm.Open(unit, id, "bad", cfg)
			if err == nil {
				p.Close()
			}
			return err
		})
	}
	err := open("eth9", 2, cfg)
	if !errors.Is(err, gm.NoSuchDevice) || !strings.HasSuffix(err.Error(), `: no interface "eth9" on this host (interfaces: eth0)`) || strings.Contains(err.Error(), "route") {
		t.Fatalf("missing interface: %v", err)
	}
	t.Log(err)
	err = open("eth0,eth9", 2, cfg)
	if !errors.Is(err, gm.NoSuchDevice) || !strings.Contains(err.Error(), `no interface "eth9"`) {
		t.Fatalf("missing second interface: %v", err)
	}

	bad := filepath.Join(t.TempDir(), "map")
	if err := os.WriteFile(bad, []byte("# a map\n1 host0 02:00:00:00:00:01\n2 host1 02:00:00:00:00:zz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCfg := *cfg
	badCfg.MapFile = bad
	err = open(h.Ifaces[0], 2, &badCfg)
	if !errors.Is(err, gm.InvalidParameter) || !strings.Contains(err.Error(), bad+": malformed node map: line 3: ") {
		t.Fatalf("malformed map: %v", err)
	}
	t.Log(err)

	for _, id := range []int{0, 1, 3} {
		err := open(h.Ifaces[0], id, cfg)
		if !errors.Is(err, gm.PermissionDenied) || strings.Contains(err.Error(), "Config") || strings.Contains(err.Error(), "Privileged") {
			t.Fatalf("reserved port %d: %v", id, err)
		}
		t.Log(err)
	}
}

// TestIntegrationOwnershipPerNamespace: a port is exclusive per network
// namespace and unit, whatever the state directory: two processes' worth
// of configurations with different state directories collide on one host,
// while two hosts sharing one state directory do not.
func TestIntegrationOwnershipPerNamespace(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	m := writeMap(t, c)
	h0, h1 := c.Hosts[0], c.Hosts[1]
	shared := filepath.Join(t.TempDir(), "state")
	cfg0, cfg1 := testConfig(h0, m), testConfig(h1, m)
	cfg0.StateDir, cfg1.StateDir = shared, shared
	p0 := openPort(t, h0, 2, cfg0)
	openPort(t, h1, 2, cfg1)
	if _, err := os.Stat(shared); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open created the state directory: %v", err)
	}
	other := *cfg0
	other.StateDir = t.TempDir()
	err := h0.Do(func() error { _, err := gm.Open(h0.Ifaces[0], 2, "other", &other); return err })
	if !errors.Is(err, gm.Busy) || !strings.Contains(err.Error(), "port 2 of unit eth0 is open in process ") {
		t.Fatalf("second open with another state directory: %v", err)
	}
	t.Log(err)
	var ports []gm.PortInfo
	if err := h1.Do(func() (err error) { ports, err = gm.ListPorts(h1.Ifaces[0]); return err }); err != nil {
		t.Fatal(err)
	}
	if len(ports) != 1 || ports[0].Host != h1.Name || ports[0].NodeID != 2 || ports[0].PID != os.Getpid() || len(ports[0].Rails) != 1 ||
		len(ports[0].MACs) != 1 || ports[0].MACs[0] != h1.MACs[0].String() || ports[0].Rails[0].Interface != "eth0" {
		t.Fatalf("ListPorts on host1 = %+v", ports)
	}
	p0.Close()
	openPort(t, h0, 2, &other) // free after Close
}
