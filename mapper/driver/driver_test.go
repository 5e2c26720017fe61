package driver

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm/link/linktest"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// fakeCore is a stand-in for the mapper core: it broadcasts a SCOUT on
// every rail every 20 ms, records who it hears on which rail and the rail
// states it is told, and installs a given map at its first Tick.
type fakeCore struct {
	cfg mapper.Config
	out mapper.Output
	m   *nodemap.Map

	next mapper.Time

	mu     sync.Mutex
	heard  map[nodemap.MAC]int // source MAC -> rail
	railUp map[int]bool
	inputs int
	lost   []lossWindow // FramesLost calls
}

// lossWindow is a FramesLost call.
type lossWindow struct {
	rail       int
	since, now mapper.Time
}

func (f *fakeCore) FramesLost(rail int, since, now mapper.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost = append(f.lost, lossWindow{rail, since, now})
}

func (f *fakeCore) Input(now mapper.Time, rail int, frame []byte) {
	h, err := wire.ParseFrame(frame, f.cfg.EtherType)
	if err != nil || h.TargetPort() != MapperPort {
		panic("driver handed the core a frame that is not a mapper frame")
	}
	if h.Type() != wire.TypeScout {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heard[wire.Ethernet(frame).Src()] = rail
	f.inputs++
}

func (f *fakeCore) Tick(now mapper.Time) {
	if f.next == 0 && f.m != nil {
		f.out.SaveState(mapper.State{LastVersion: f.m.Version}, false)
		f.out.InstallMap(f.m)
	}
	for r, mac := range f.cfg.MACs {
		hf := wire.HeaderFields{Type: wire.TypeScout, TargetPort: MapperPort, SourcePort: MapperPort}
		f.out.Send(r, wire.AppendFrame(nil, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, mac, f.cfg.EtherType, &hf, []byte("fake")))
	}
	f.next = now + 20*time.Millisecond
}

func (f *fakeCore) NextDeadline() mapper.Time { return f.next }
func (f *fakeCore) RecvDelay() mapper.Time    { return 10 * time.Millisecond }

func (f *fakeCore) SetRailUp(rail int, up bool, now mapper.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.railUp[rail] = up
}

func (f *fakeCore) Status() mapper.Status {
	return mapper.Status{Host: f.cfg.Host, MapVersion: f.m.Version, Hosts: f.m.Len()}
}

func (f *fakeCore) Summary() mapper.Status { return f.Status() }

func (f *fakeCore) Map() *nodemap.Map { return f.m }

func (f *fakeCore) snapshot() (map[nodemap.MAC]int, map[int]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := make(map[nodemap.MAC]int, len(f.heard))
	for k, v := range f.heard {
		h[k] = v
	}
	u := make(map[int]bool, len(f.railUp))
	for k, v := range f.railUp {
		u[k] = v
	}
	return h, u
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNackRate(t *testing.T) {
	var n nackState
	n.init()
	sent := 0
	for range 1000 {
		if n.take(0) {
			sent++
		}
	}
	if sent != nackBurst {
		t.Fatalf("burst %d, want %d", sent, nackBurst)
	}
	if !n.take(10 * time.Millisecond) {
		t.Fatal("no token after 10 ms")
	}
}

func TestWriteAtomicAndLoadState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "u.hosts")
	if s, err := loadState(path); err != nil || s.LastVersion != 0 || len(s.Hosts) != 0 {
		t.Fatalf("missing hosts file: %+v, %v; want a fresh start", s, err)
	}
	if err := nodemap.WriteFileAtomic(path, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := nodemap.WriteFileAtomic(path, []byte("y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "y\n" {
		t.Fatalf("%q, %v", b, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestAnswerable(t *testing.T) {
	for _, tt := range []struct {
		t    wire.Type
		want bool
	}{
		{wire.TypeOpen, true}, {wire.TypeData, true}, {wire.TypeDataFirst, true}, {wire.TypeDataMiddle, true},
		{wire.TypeDataLast, true}, {wire.TypePut, true}, {wire.TypeGet, true}, {wire.TypeGot, true},
		{wire.TypeAck, false}, {wire.TypeNack, false}, {wire.TypeOpenAck, false}, {wire.TypeDatagram, false},
		{wire.TypeScout, false}, {wire.TypeConfig, false},
	} {
		if got := answerable(tt.t); got != tt.want {
			t.Errorf("answerable(%v) = %v, want %v", tt.t, got, tt.want)
		}
	}
}

// statusCore is a Core of which logChanges only asks the summary.
type statusCore struct {
	Core
	st mapper.Status
}

func (c *statusCore) Summary() mapper.Status { return c.st }

// TestLogChangesNewConfiguredMap: a map installed and configured between
// two looks is logged although the configured flag never read false, so
// that the log's last "network fully configured" line names the map in use.
func TestLogChangesNewConfiguredMap(t *testing.T) {
	var out bytes.Buffer
	c := &statusCore{st: mapper.Status{Configured: true, MapVersion: 3, Hosts: 23}}
	d := &Driver{core: c, log: slog.New(slog.NewTextHandler(&out, nil))}
	d.logChanges()
	d.logChanges()
	c.st.MapVersion, c.st.Hosts = 4, 24
	d.logChanges()
	c.st.Configured = false
	d.logChanges()
	got := strings.Count(out.String(), "msg=\"network fully configured\"")
	if got != 2 || !strings.Contains(out.String(), "version=4 hosts=24") || !strings.Contains(out.String(), "NOT fully configured") {
		t.Errorf("want two configured lines (versions 3 and 4) and one NOT, got:\n%s", out.String())
	}
}

// TestStateSync: the hosts file is written off the Driver's goroutine,
// except a state saved with sync (a version this host made, whose CONFIG
// follows), which is on disk when SaveState returns.
func TestStateSync(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "lib", "hosts")
	hub := linktest.NewHub()
	lk := hub.Open("eth0", hostMACs[0], 0, nil)
	d := &Driver{cfg: Config{EtherType: wire.EtherType}, log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
		rails: []*rail{{name: "eth0", mac: hostMACs[0], lk: lk}}}
	d.disk = newDiskWriter(d.log, filepath.Join(dir, "map"), hosts) // its goroutine is not running
	o := output{d}
	o.SaveState(mapper.State{LastVersion: 7}, false)
	if _, err := os.Stat(hosts); err == nil {
		t.Fatal("a state saved without sync was written on the Driver's goroutine")
	}
	o.SaveState(mapper.State{LastVersion: 8}, true)
	s, err := loadState(hosts)
	if err != nil || s.LastVersion != 8 {
		t.Fatalf("hosts file after a SaveState with sync: %+v, %v; want version 8", s, err)
	}
}
