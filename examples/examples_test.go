package examples_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
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
	mapFile := gmmap.MustWrite(t, c)
	h0, h1 := c.Hosts[0], c.Hosts[1]
	recv, err := h1.Start(filepath.Join(bin, "simple_recv"), "--hostname", h1.Name, "--state-dir", h1.Dir, "--map-file", mapFile, "--timeout", "20s")
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Stop()
	// Wait until the receiver's port is open.
	deadline := time.Now().Add(10 * time.Second)
	var out string
	for {
		out, err = h0.Run(filepath.Join(bin, "simple_send"), "--remote-host", h1.Name, "--hostname", h0.Name, "--state-dir", h0.Dir, "--map-file", mapFile, "--timeout", "5s", "hello", "GM")
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

// TestIntegrationPutGet runs put_get's server and client as processes on
// two hosts: a 40000-byte put into the server's registered buffer, a get
// of it back, and the server's check of its memory.
func TestIntegrationPutGet(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	bin := t.TempDir()
	prog := filepath.Join(bin, "put_get")
	if out, err := exec.Command("go", "build", "-o", prog, "./put_get").CombinedOutput(); err != nil {
		t.Fatalf("build put_get: %v\n%s", err, out)
	}
	mapFile := gmmap.MustWrite(t, c)
	h0, h1 := c.Hosts[0], c.Hosts[1]
	srv, err := h1.Start(prog, "--serve", "--hostname", h1.Name, "--state-dir", h1.Dir, "--map-file", mapFile, "--timeout", "20s")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(srv.Output(), "remote access allowed") {
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %s", srv.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, err := h0.Run(prog, "--remote-host", h1.Name, "--hostname", h0.Name, "--state-dir", h0.Dir, "--map-file", mapFile, "--timeout", "10s", "--bytes", "40000")
	if err != nil {
		t.Fatalf("client: %v\n%s\nserver: %s", err, out, srv.Output())
	}
	if !strings.Contains(out, "got them back, identical") || !strings.Contains(out, `server says "ok"`) {
		t.Fatalf("client output: %s", out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srv.Output())
	}
	if !strings.Contains(srv.Output(), "put 40000 bytes without an event; checked: ok") {
		t.Fatalf("server output: %s", srv.Output())
	}
}
