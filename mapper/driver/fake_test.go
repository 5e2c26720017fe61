package driver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/gm/link/linktest"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// fakeProbe is a Prober over a table the test changes.
type fakeProbe struct {
	mu  sync.Mutex
	ifs map[string]*fakeIf
}

type fakeIf struct {
	index       int
	mac         nodemap.MAC
	mtu         int
	up, running bool
}

func (p *fakeProbe) State(name string) (int, bool, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.ifs[name]
	if !ok {
		return 0, false, false
	}
	return i.index, i.up, i.running
}

func (p *fakeProbe) Addr(name string) (net.HardwareAddr, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.ifs[name]
	if !ok || i.index == 0 {
		return nil, 0, fmt.Errorf("no interface %s", name)
	}
	if i.mac == (nodemap.MAC{}) {
		return nil, i.mtu, nil // not Ethernet
	}
	return net.HardwareAddr(i.mac[:]), i.mtu, nil
}

func (p *fakeProbe) set(name string, f func(*fakeIf)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p.ifs[name])
}

// fakeHost is a Driver on two in-memory segments (its eth0 and eth1), a
// peer's link on each, and a fakeCore that installs a map of the two.
type fakeHost struct {
	t     *testing.T
	unit  string
	dir   string
	hubs  [2]*linktest.Hub
	peers [2]*linktest.Link
	probe *fakeProbe
	d     *Driver
	core  *fakeCore
	opens map[string]int            // links opened per interface
	links map[string]*linktest.Link // the last mapper link opened per interface
	mu    sync.Mutex
}

var (
	hostMACs = [2]nodemap.MAC{{2, 0, 0, 0, 1, 0}, {2, 0, 0, 0, 1, 1}}
	peerMACs = [2]nodemap.MAC{{2, 0, 0, 0, 2, 0}, {2, 0, 0, 0, 2, 1}}
)

func fakeUnit() string {
	return fmt.Sprintf("drvtest%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
}

func fakeMap(t *testing.T) *nodemap.Map {
	t.Helper()
	m, err := nodemap.New(3, hostMACs[0], []nodemap.Entry{
		{ID: 1, Host: "self", MACs: hostMACs[:]},
		{ID: 2, Host: "peer", MACs: peerMACs[:]},
	}, []nodemap.Route{
		{Node: 2, Local: hostMACs[0], Peer: peerMACs[0]},
		{Node: 2, Local: hostMACs[1], Peer: peerMACs[1]},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newFakeHost builds the host; recvPoll goes to Config.RecvPoll.
func newFakeHost(t *testing.T, recvPoll time.Duration) *fakeHost {
	t.Helper()
	h := &fakeHost{t: t, unit: fakeUnit(), dir: t.TempDir(), opens: map[string]int{}, links: map[string]*linktest.Link{}}
	h.probe = &fakeProbe{ifs: map[string]*fakeIf{
		"eth0": {index: 10, mac: hostMACs[0], mtu: 1500, up: true, running: true},
		"eth1": {index: 11, mac: hostMACs[1], mtu: 9000, up: true, running: true},
	}}
	// One segment for both rails (linktest's WaitAny sleeps on links of
	// one Hub); the peers send to the host's MACs, not to broadcast.
	hub := linktest.NewHub()
	for i := range h.hubs {
		h.hubs[i] = hub
		h.peers[i] = h.hubs[i].Open(fmt.Sprintf("peer%d", i), peerMACs[i], 0, nil)
	}
	h.core = &fakeCore{m: fakeMap(t), heard: map[nodemap.MAC]int{}, railUp: map[int]bool{}}
	d, err := New(h.config(recvPoll))
	if err != nil {
		t.Fatal(err)
	}
	h.d = d
	return h
}

func (h *fakeHost) config(recvPoll time.Duration) Config {
	return Config{
		Unit: h.unit, Interfaces: []string{"eth0", "eth1"}, Host: "self", Level: 1,
		MapFile: filepath.Join(h.dir, "map"), HostsFile: filepath.Join(h.dir, "lib", "u.hosts"),
		PollInterval: 5 * time.Millisecond, RecvPoll: recvPoll,
		Logger: slog.New(slog.NewTextHandler(testWriter{h.t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Probe:  h.probe,
		OpenLink: func(ifname string, cfg *link.Config) (link.Endpoint, error) {
			i := map[string]int{"eth0": 0, "eth1": 1}[ifname]
			l := h.hubs[i].Open(ifname, hostMACs[i], 0, cfg)
			h.mu.Lock()
			h.opens[ifname]++
			if cfg.Ports == 1<<MapperPort {
				h.links[ifname] = l
			}
			h.mu.Unlock()
			return l, nil
		},
		NewCore: func(c mapper.Config, o mapper.Output) (Core, error) {
			h.core.cfg, h.core.out = c, o
			return h.core, nil
		},
	}
}

func (h *fakeHost) linkOpens(ifname string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.opens[ifname]
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// run runs the Driver until the test ends.
func (h *fakeHost) run() {
	done := make(chan error, 1)
	go func() { done <- h.d.Run() }()
	h.t.Cleanup(func() {
		h.d.Stop()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			h.t.Errorf("Run did not return 10 s after Stop")
		}
		h.d.Close()
	})
}

// status queries the Driver on its ctl name, as a tool does.
func (h *fakeHost) status() Status {
	h.t.Helper()
	var st Status
	if _, err := ctl.Query(ctl.MapperName(h.unit), &st); err != nil {
		h.t.Fatal(err)
	}
	return st
}

// send sends a frame of type typ from the peer's rail r to port of node.
func (h *fakeHost) send(r int, typ wire.Type, node uint32, port uint8, seq uint32) {
	h.t.Helper()
	f := wire.HeaderFields{Type: typ, TargetPort: port, SourcePort: 4, TargetNode: node, SourceNode: 2, Session: 77, Seq: seq}
	if typ.IsData() {
		f.MsgLen = 8
	}
	frame := wire.AppendFrame(nil, hostMACs[r], peerMACs[r], wire.EtherType, &f, make([]byte, 8))
	if err := h.peers[r].Send(frame); err != nil {
		h.t.Fatal(err)
	}
}

// nextNack waits for the next NACK the peer's rail r receives (skipping
// mapper frames) and returns it.
func (h *fakeHost) nextNack(r int) wire.Header {
	h.t.Helper()
	frames := make([][]byte, 16)
	end := time.Now().Add(20 * time.Second)
	for time.Now().Before(end) {
		n, err := h.peers[r].Wait(frames[:1], time.Second)
		if err != nil {
			h.t.Fatal(err)
		}
		if n == 0 {
			continue
		}
		hd, err := wire.ParseFrameCRC(frames[0], wire.EtherType)
		if err != nil || hd.Type() != wire.TypeNack {
			continue
		}
		return hd
	}
	h.t.Fatal("no nack within 20 s")
	return nil
}

// TestDriverFakeLinks runs a Driver over in-memory links (no privileges):
// the frames of each rail reach the core with their rail number and only
// mapper frames do, the map and hosts files are written, the status is
// served and a second Driver of the unit is refused; rails go down and up
// with their interfaces, an interface that vanishes has its links closed
// and reopened when it is back, and one that comes back with another MAC
// stays down. It runs once with the periodic receive poll and once with
// the Driver sleeping on its links.
func TestDriverFakeLinks(t *testing.T) {
	for _, poll := range []time.Duration{0, -1} {
		t.Run(fmt.Sprintf("RecvPoll=%v", poll), func(t *testing.T) {
			h := newFakeHost(t, poll)
			h.run()
			f := h.core

			waitUntil(t, 10*time.Second, "the map file", func() bool {
				_, err := os.Stat(filepath.Join(h.dir, "map"))
				return err == nil
			})
			// Scouts from the peer on each rail, and a data frame for
			// the mapper port that must not reach the core (fakeCore
			// panics on anything but a SCOUT).
			for r := range 2 {
				hf := wire.HeaderFields{Type: wire.TypeScout, TargetPort: MapperPort, SourcePort: MapperPort}
				if err := h.peers[r].Send(wire.AppendFrame(nil, hostMACs[r], peerMACs[r], wire.EtherType, &hf, []byte("x"))); err != nil {
					t.Fatal(err)
				}
				h.send(r, wire.TypeAck, 1, 9, 1)
			}
			waitUntil(t, 10*time.Second, "the core to hear the peer on both rails", func() bool {
				heard, _ := f.snapshot()
				_, ok0 := heard[peerMACs[0]]
				_, ok1 := heard[peerMACs[1]]
				return ok0 && ok1
			})
			if heard, _ := f.snapshot(); heard[peerMACs[0]] != 0 || heard[peerMACs[1]] != 1 {
				t.Fatalf("heard %v, want the peer's rail-0 MAC on rail 0 and rail-1 MAC on rail 1", heard)
			}
			if _, err := os.Stat(filepath.Join(h.dir, "lib", "u.hosts")); err != nil {
				t.Fatalf("hosts file: %v", err)
			}

			st := h.status()
			if st.PID != os.Getpid() || st.Unit != h.unit || st.MapVersion != 3 || len(st.Interfaces) != 2 ||
				st.Interfaces[1].Mode != "linktest" || st.Interfaces[0].MAC != nodemap.FormatMAC(hostMACs[0]) {
				t.Fatalf("status %+v", st)
			}
			if st.Interfaces[0].Link.TxFrames == 0 || st.Interfaces[0].Link.RxFrames == 0 {
				t.Fatalf("link counters %+v, want frames both ways", st.Interfaces[0].Link)
			}
			if _, err := New(h.config(poll)); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "pid ") {
				t.Fatalf("second driver: %v; want ErrBusy naming the pid", err)
			}

			railUp := func(r int) (bool, bool) {
				_, up := f.snapshot()
				v, ok := up[r]
				return v, ok
			}
			// Down (no carrier) and up.
			h.probe.set("eth1", func(i *fakeIf) { i.running = false })
			waitUntil(t, 10*time.Second, "rail 1 down", func() bool { v, ok := railUp(1); return ok && !v })
			h.probe.set("eth1", func(i *fakeIf) { i.running = true })
			waitUntil(t, 10*time.Second, "rail 1 up", func() bool { v, _ := railUp(1); return v })

			// Gone and back under another index, same MAC: a new link.
			opens := h.linkOpens("eth1")
			h.probe.set("eth1", func(i *fakeIf) { i.index = 0 })
			waitUntil(t, 10*time.Second, "rail 1's link to close", func() bool {
				st := h.status()
				return st.Interfaces[1].Mode == "" && !st.Interfaces[1].Up
			})
			h.probe.set("eth1", func(i *fakeIf) { i.index = 12 })
			waitUntil(t, 10*time.Second, "rail 1 up again", func() bool { v, _ := railUp(1); return v && h.linkOpens("eth1") > opens })

			// Replaced by an interface with another MAC: it stays down
			// until one with the MAC the core knows is back.
			h.probe.set("eth0", func(i *fakeIf) { i.index = 20; i.mac = nodemap.MAC{2, 9, 9, 9, 9, 9} })
			waitUntil(t, 10*time.Second, "rail 0 down with a new MAC", func() bool { v, ok := railUp(0); return ok && !v })
			h.probe.set("eth0", func(i *fakeIf) { i.index = 21; i.mac = hostMACs[0] })
			waitUntil(t, 10*time.Second, "rail 0 up with its MAC back", func() bool { v, _ := railUp(0); return v })

			// Down administratively: the link is not reopened while down.
			h.probe.set("eth0", func(i *fakeIf) { i.up = false })
			waitUntil(t, 10*time.Second, "rail 0 down", func() bool { v, _ := railUp(0); return !v })
			h.probe.set("eth0", func(i *fakeIf) { i.up = true })
			waitUntil(t, 10*time.Second, "rail 0 up", func() bool { v, _ := railUp(0); return v })
		})
	}
}

func (h *fakeHost) mapperLink(ifname string) *linktest.Link {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.links[ifname]
}

// TestDriverReportsLoss: frames the kernel drops from a full mapper ring
// (the link's KernelDrops) are reported to the core as a loss window on
// their rail (FramesLost: since the previous look at the ring), and
// nothing is reported while no frame is dropped.
func TestDriverReportsLoss(t *testing.T) {
	h := newFakeHost(t, 0)
	h.run()
	f := h.core
	waitUntil(t, 10*time.Second, "the mapper links", func() bool {
		return h.mapperLink("eth0") != nil && h.mapperLink("eth1") != nil
	})
	scout := func(r int) {
		hf := wire.HeaderFields{Type: wire.TypeScout, TargetPort: MapperPort, SourcePort: MapperPort}
		if err := h.peers[r].Send(wire.AppendFrame(nil, hostMACs[r], peerMACs[r], wire.EtherType, &hf, []byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 10*time.Second, "the core to hear the peer", func() bool {
		scout(0)
		scout(1)
		heard, _ := f.snapshot()
		_, ok0 := heard[peerMACs[0]]
		_, ok1 := heard[peerMACs[1]]
		return ok0 && ok1
	})
	f.mu.Lock()
	early := len(f.lost)
	f.mu.Unlock()
	if early != 0 {
		t.Fatalf("%d loss windows reported while no frame was dropped", early)
	}
	// A ring of a batch of frames (the Driver asks for drops when a look
	// finds a full batch: a ring that dropped frames was full).
	h.mapperLink("eth0").SetRxFrames(len(h.d.frames))
	for range 20 * len(h.d.frames) { // faster than the Driver reads: many are dropped
		scout(0)
	}
	waitUntil(t, 10*time.Second, "a loss window", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.lost) > 0
	})
	f.mu.Lock()
	lost := slices.Clone(f.lost)
	f.mu.Unlock()
	for _, w := range lost {
		if w.rail != 0 || w.since < 0 || w.since > w.now {
			t.Errorf("loss window %+v, want rail 0 and since <= now", w)
		}
	}
	if st := h.status(); st.Interfaces[0].Link.KernelDrops == 0 || st.Interfaces[1].Link.KernelDrops != 0 {
		t.Errorf("kernel drops %d and %d, want some on rail 0 only", st.Interfaces[0].Link.KernelDrops, st.Interfaces[1].Link.KernelDrops)
	}
}

// TestDriverClosedPorts answers for the unit's closed ports over
// in-memory links: a frame for a closed port is answered with PORT_CLOSED
// (echoing session, sequence number and ports), one for an open port, for
// another node or of a type that is not answered is not; a port whose
// connection to the Driver ends counts as closed at once, by that event
// (PortsClosedByEvent), even while its name is still held; a port that
// holds no connection is found by the socket list and found closed by it
// (PortsClosedByPoll).
func TestDriverClosedPorts(t *testing.T) {
	for _, poll := range []time.Duration{0, -1} {
		t.Run(fmt.Sprintf("RecvPoll=%v", poll), func(t *testing.T) {
			h := newFakeHost(t, poll)
			h.run()
			waitUntil(t, 10*time.Second, "closed-ports links", func() bool {
				st := h.status()
				return st.Interfaces[0].ClosedPorts&(1<<5) != 0 && st.Interfaces[1].ClosedPorts&(1<<5) != 0
			})

			// Closed port 5: answered on the rail it came from.
			h.send(1, wire.TypeData, 1, 5, 1234)
			n := h.nextNack(1)
			if n.NackReason() != wire.NackPortClosed || n.SourcePort() != 5 || n.TargetPort() != 4 ||
				n.SourceNode() != 1 || n.TargetNode() != 2 || n.Session() != 77 || n.Seq() != 1234 {
				t.Fatalf("nack %+v", n.Fields())
			}

			// Port 5 opens and connects: no answer for it. Not answered
			// either: another node's frame, an ACK, the mapper port.
			// The frame for closed port 6 that follows, on the same
			// link, is answered: the nack the peer gets is port 6's.
			srv, err := ctl.Listen(ctl.PortName(h.unit, 5), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			wc, err := ctl.DialWatch(h.unit, 5, nil)
			if err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 10*time.Second, "port 5 open", func() bool {
				st := h.status()
				return len(st.OpenPorts) == 1 && st.OpenPorts[0] == 5 && st.Interfaces[0].ClosedPorts&(1<<5) == 0
			})
			h.send(0, wire.TypeData, 1, 5, 1)
			h.send(0, wire.TypeData, 9, 7, 2)
			h.send(0, wire.TypeAck, 1, 7, 3)
			h.send(0, wire.TypeOpen, 1, MapperPort, 4)
			h.send(0, wire.TypeOpen, 1, 6, 5)
			if n := h.nextNack(0); n.SourcePort() != 6 || n.Seq() != 5 {
				t.Fatalf("nack %+v, want port 6's", n.Fields())
			}

			// Port 5's connection ends while its name is still held (a
			// process being killed): closed at once, by the event.
			wc.Close()
			waitUntil(t, 10*time.Second, "port 5 closed by its connection's end", func() bool {
				st := h.status()
				return len(st.OpenPorts) == 0 && st.PortsClosedByEvent == 1
			})
			h.send(0, wire.TypeData, 1, 5, 6)
			if n := h.nextNack(0); n.SourcePort() != 5 || n.Seq() != 6 {
				t.Fatalf("nack %+v, want port 5's", n.Fields())
			}
			srv.Close()

			// Port 8 holds no connection: the socket list finds it open,
			// then closed.
			srv8, err := ctl.Listen(ctl.PortName(h.unit, 8), nil)
			if err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 10*time.Second, "port 8 listed", func() bool {
				st := h.status()
				return len(st.OpenPorts) == 1 && st.OpenPorts[0] == 8
			})
			srv8.Close()
			waitUntil(t, 10*time.Second, "port 8 closed by the list", func() bool {
				st := h.status()
				return len(st.OpenPorts) == 0 && st.PortsClosedByPoll == 1
			})
			if st := h.status(); st.PortsClosedByEvent != 1 || st.ClosedNacks != 3 {
				t.Fatalf("status %+v, want 1 port closed by event and 3 nacks", st)
			}
		})
	}
}

// TestPortState holds the open-port bookkeeping to its rules.
func TestPortState(t *testing.T) {
	var s portState
	if !s.list(1<<2|1<<3) || s.open() != 1<<2|1<<3 {
		t.Fatalf("listed: open %#x", s.open())
	}
	if !s.connected(1<<3|1<<4, 0) || s.open() != 1<<2|1<<3|1<<4 {
		t.Fatalf("connected: open %#x", s.open())
	}
	// 3's connection ends while the list still shows it.
	if !s.connected(1<<4, 1<<3) || s.open() != 1<<2|1<<4 || s.byEvent != 1 {
		t.Fatalf("3 ended: open %#x byEvent %d", s.open(), s.byEvent)
	}
	if s.list(1<<2|1<<3) || s.open() != 1<<2|1<<4 {
		t.Fatalf("3 still listed: open %#x, want it gone", s.open())
	}
	// 4 ends and reconnects before the Driver looks: still open.
	if s.connected(1<<4, 1<<4) || s.open() != 1<<2|1<<4 || s.byEvent != 1 {
		t.Fatalf("4 reconnected: open %#x byEvent %d", s.open(), s.byEvent)
	}
	// The list no longer shows 3 (its gone mark clears) nor 2 (closed by
	// the poll); 3 is listed again by a new owner: open.
	if !s.list(0) || s.open() != 1<<4 || s.byPoll != 1 || s.gone != 0 {
		t.Fatalf("list empty: open %#x byPoll %d gone %#x", s.open(), s.byPoll, s.gone)
	}
	if !s.list(1<<3) || s.open() != 1<<3|1<<4 {
		t.Fatalf("3 listed again: open %#x", s.open())
	}
}

// TestNewErrors checks New's refusals of a bad configuration.
func TestNewErrors(t *testing.T) {
	probe := &fakeProbe{ifs: map[string]*fakeIf{
		"eth0": {index: 1, mac: hostMACs[0], mtu: 1500},
		"ib0":  {index: 2, mtu: 1500}, // no MAC
	}}
	for _, tt := range []struct {
		ifs  []string
		want string
	}{
		{nil, "0 interfaces"},
		{[]string{"eth0", "eth9"}, "interface eth9"},
		{[]string{"ib0"}, "not an Ethernet interface"},
	} {
		_, err := New(Config{Unit: fakeUnit(), Interfaces: tt.ifs, Probe: probe, Logger: slog.New(slog.DiscardHandler)})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%v): %v, want an error saying %q", tt.ifs, err, tt.want)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "hosts")
	if err := os.WriteFile(bad, []byte("not a hosts file\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{Unit: fakeUnit(), Interfaces: []string{"eth0"}, Probe: probe, HostsFile: bad, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("New with a bad hosts file: %v, want an error naming it", err)
	}
}
