package nodemap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mac(s string) MAC {
	m, err := ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func TestParseStatic(t *testing.T) {
	m, err := Parse([]byte("# a static map\n1 a 02:00:00:00:00:01,02:00:00:00:01:01\n 2\tb 02:00:00:00:00:02 # comment\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != 0 || m.Mapper != (MAC{}) || m.Routed() || m.Len() != 2 {
		t.Fatalf("static map parsed as version %d mapper %v routed %v len %d", m.Version, m.Mapper, m.Routed(), m.Len())
	}
	// Rail pairing: a's second rail reaches b's first MAC (b has one rail).
	if got, ok := m.PeerMAC(1, 2, mac("02:00:00:00:01:01")); !ok || got != mac("02:00:00:00:00:02") {
		t.Fatalf("PeerMAC = %v %v", got, ok)
	}
	if got, ok := m.PeerMAC(2, 1, mac("02:00:00:00:00:02")); !ok || got != mac("02:00:00:00:00:01") {
		t.Fatalf("PeerMAC = %v %v", got, ok)
	}
	if e, ok := m.Self("nobody", mac("02:00:00:00:01:01")); !ok || e.Host != "a" {
		t.Fatalf("Self by MAC = %v %v", e, ok)
	}
}

func TestRoundTripRouted(t *testing.T) {
	a0, a1, b0, b1 := mac("02:00:00:00:00:01"), mac("02:00:00:00:01:01"), mac("02:00:00:00:00:02"), mac("02:00:00:00:01:02")
	m, err := New(7, a0, []Entry{{ID: 1, Host: "a", MACs: []MAC{a0, a1}}, {ID: 3, Host: "b", MACs: []MAC{b0, b1}}},
		[]Route{{Node: 3, Local: a0, Peer: b1}, {Node: 3, Local: a1, Peer: b0}})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := Parse(m.Format())
	if err != nil {
		t.Fatal(err)
	}
	if string(m2.Format()) != string(m.Format()) || m2.Version != 7 || m2.Mapper != a0 {
		t.Fatalf("round trip differs:\n%s\n%s", m.Format(), m2.Format())
	}
	// Crossed rails: a's eth0 reaches b's eth1.
	if got, ok := m2.PeerMAC(1, 3, a0); !ok || got != b1 {
		t.Fatalf("PeerMAC(a0) = %v %v, want b1", got, ok)
	}
	if got, ok := m2.PeerMAC(1, 3, a1); !ok || got != b0 {
		t.Fatalf("PeerMAC(a1) = %v %v, want b0", got, ok)
	}
	if _, ok := m2.PeerMAC(1, 3, mac("02:00:00:00:09:09")); ok {
		t.Fatal("an interface without a route reaches the peer")
	}
	// A mapper's map in which this host has no route reaches nobody: it
	// must not fall back to pairing rails by position.
	isolated, err := New(8, a0, m2.Entries(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := isolated.PeerMAC(1, 3, a0); ok || !isolated.Routed() {
		t.Fatal("a mapper's map without routes reaches a peer")
	}
	if m2.MaxNodeIDInUse() != 3 || len(m2.RoutesTo(3)) != 2 || len(m2.RoutesTo(1)) != 0 {
		t.Fatalf("MaxNodeIDInUse %d RoutesTo(3) %v", m2.MaxNodeIDInUse(), m2.RoutesTo(3))
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"1 a",
		"0 a 02:00:00:00:00:01",
		"1 a zz",
		"1 a 02:00:00:00:00:01\n1 b 02:00:00:00:00:02",
		"1 a 02:00:00:00:00:01\n2 a 02:00:00:00:00:02",
		"1 a 02:00:00:00:00:01\n2 b 02:00:00:00:00:01",
		"version 0",
		"version x y",
		"mapper 1",
		"route 2 02:00:00:00:00:01 02:00:00:00:00:02\n1 a 02:00:00:00:00:01",
		"1 " + strings.Repeat("x", MaxHostNameLen+1) + " 02:00:00:00:00:01",
	} {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrFormat) {
			t.Errorf("Parse(%q) = %v, want ErrFormat", in, err)
		}
	}
}

func TestWatcher(t *testing.T) {
	path := filepath.Join(t.TempDir(), "map")
	w := Watcher{Path: path}
	if _, err := w.Load(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	m1, _ := New(1, MAC{2}, []Entry{{ID: 1, Host: "a", MACs: []MAC{{2, 0, 0, 0, 0, 1}}}}, nil)
	if err := WriteFile(path, m1); err != nil {
		t.Fatal(err)
	}
	got, err := w.Load()
	if err != nil || got == nil || got.Version != 1 {
		t.Fatalf("first load: %v %v", got, err)
	}
	if got, err := w.Load(); got != nil || err != nil {
		t.Fatalf("unchanged file reloaded: %v %v", got, err)
	}
	m2, _ := New(2, MAC{2}, m1.Entries(), nil)
	if err := WriteFile(path, m2); err != nil {
		t.Fatal(err)
	}
	if got, err := w.Load(); err != nil || got == nil || got.Version != 2 {
		t.Fatalf("second load: %v %v", got, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestParseMAC(t *testing.T) {
	for in, want := range map[string]string{"02:00:5E:10:00:01": "02:00:5e:10:00:01", "02-00-5e-10-00-ff": "02:00:5e:10:00:ff"} {
		m, err := ParseMAC(in)
		if err != nil || FormatMAC(m) != want {
			t.Errorf("ParseMAC(%q) = %s %v, want %s", in, FormatMAC(m), err, want)
		}
	}
	for _, in := range []string{"", "02:00:5e:10:00", "02:00:5e:10:00:0g", "02:00:5e:10:00:001", "02;00:5e:10:00:01"} {
		if _, err := ParseMAC(in); err == nil {
			t.Errorf("ParseMAC(%q) succeeded", in)
		}
	}
}
