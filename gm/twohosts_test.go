package gm

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm/link/linktest"
)

// twoHosts makes an in-memory network of host0 and host1 (one interface
// each, h0r0 and h1r0, on one linktest hub) with a node map of both, for
// the package's own tests. open opens port id of host h as a unit named
// after name; mod, if not nil, adjusts its Config (which never reloads the
// map). The port is closed when the test ends.
func twoHosts(t *testing.T, name string) (open func(h, id int, mod func(*Config)) *Port) {
	t.Helper()
	dir := t.TempDir()
	macs := map[string][6]byte{"h0r0": {2, 0, 0, 0, 0, 1}, "h1r0": {2, 0, 0, 0, 0, 2}}
	mapf := filepath.Join(dir, "map")
	if err := os.WriteFile(mapf, []byte("1 host0 02:00:00:00:00:01\n2 host1 02:00:00:00:00:02\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hub := linktest.NewHub()
	return func(h, id int, mod func(*Config)) *Port {
		t.Helper()
		cfg := &Config{
			Host: fmt.Sprintf("host%d", h), StateDir: dir, MapFile: mapf, MapPoll: time.Hour,
			OpenLink: hub.Opener(macs, 0),
		}
		if mod != nil {
			mod(cfg)
		}
		u := &Unit{Name: fmt.Sprintf("%s%d-%d", name, os.Getpid(), h), Interfaces: []string{fmt.Sprintf("h%dr0", h)}}
		p, err := OpenUnit(u, id, name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
}
