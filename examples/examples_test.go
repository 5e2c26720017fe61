package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/tests/netns"
)

// TestIntegrationSimpleExample builds simple_send and simple_recv and runs
// them as processes on two hosts of a netns cluster.
func TestIntegrationSimpleExample(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	bin := t.TempDir()
	for _, name := range []string{"simple_send", "simple_recv"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, name), "./"+name).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	var entries []gm.MapEntry
	for i, h := range c.Hosts {
		entries = append(entries, gm.MapEntry{ID: gm.NodeID(i + 1), Host: h.Name, MACs: [][6]byte{[6]byte(h.MACs[0])}})
	}
	m, err := gm.NewNodeMap(entries)
	if err != nil {
		t.Fatal(err)
	}
	mapFile := filepath.Join(t.TempDir(), "map")
	if err := os.WriteFile(mapFile, m.Format(), 0o644); err != nil {
		t.Fatal(err)
	}
	h0, h1 := c.Hosts[0], c.Hosts[1]
	recv, err := h1.Start(filepath.Join(bin, "simple_recv"), "-host", h1.Name, "-state", h1.Dir, "-map", mapFile, "-timeout", "20s")
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Stop()
	// Wait until the receiver's port is open (its lock file is held).
	deadline := time.Now().Add(10 * time.Second)
	var out string
	for {
		out, err = h0.Run(filepath.Join(bin, "simple_send"), "-to", h1.Name, "-host", h0.Name, "-state", h0.Dir, "-map", mapFile, "-timeout", "5s", "hello", "GM")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("simple_send: %v\n%s\nreceiver: %s", err, out, recv.Output())
	}
	if !strings.Contains(out, `reply "ok"`) {
		t.Fatalf("sender output: %s", out)
	}
	if err := recv.Wait(); err != nil {
		t.Fatalf("simple_recv: %v\n%s", err, recv.Output())
	}
	if !strings.Contains(recv.Output(), `received "hello GM"`) {
		t.Fatalf("receiver output: %s", recv.Output())
	}
	t.Logf("sender:\n%sreceiver:\n%s", out, recv.Output())
}
