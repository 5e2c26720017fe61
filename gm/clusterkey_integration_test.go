package gm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/wire"
)

// TestIntegrationClusterKeyPorts: ports of host0 and host1 share a cluster
// key (partition 1) and exchange messages of every length class, segmented
// to the MTU the trailer leaves; a port of host2 without the key, and one
// with the key in partition 2, reach nothing on host1: their sends fail,
// host1 delivers nothing of theirs and counts their frames.
func TestIntegrationClusterKeyPorts(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3})
	m := writeMap(t, c)
	keyFile := writeKeyFile(t, "# test key\nports-cluster-key-0123456789abcdef\n")
	keyed := func(h *netns.Host, partition uint16) *gm.Config {
		cfg := testConfig(h, m)
		cfg.ClusterKeyFile, cfg.Partition = keyFile, partition
		return cfg
	}
	// A's sealed frames as they went on the wire, for the replay below.
	key, err := link.LoadAuth(keyFile, 1)
	if err != nil {
		t.Fatal(err)
	}
	ca0 := keyed(c.Hosts[0], 1)
	sent := sealedSends(t, ca0, key, func(wire.Header) bool { return true })
	a := openPort(t, c.Hosts[0], 2, ca0)
	// A second keyed port on host0: frames between them travel through lo.
	a2 := openPort(t, c.Hosts[0], 6, keyed(c.Hosts[0], 1))
	b := openPort(t, c.Hosts[1], 4, keyed(c.Hosts[1], 1))
	noKey := testConfig(c.Hosts[2], m)
	noKey.LivenessTimeout, noKey.ProgressTimeout = 2*time.Second, 2*time.Second
	x := openPort(t, c.Hosts[2], 2, noKey)
	other := keyed(c.Hosts[2], 2)
	other.LivenessTimeout, other.ProgressTimeout = 2*time.Second, 2*time.Second
	y := openPort(t, c.Hosts[2], 5, other)

	lengths := []int{0, 8, 1400, 1500, 70000}
	for _, n := range lengths {
		for i := 0; i < 2; i++ {
			if err := b.ProvideReceiveBuffer(make([]byte, 1<<gm.MinSizeForLength(n)), gm.MinSizeForLength(n), gm.LowPriority, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := make(chan []byte, 16)
	from := make(chan gm.NodeID, 16)
	lb := startLoop(b, func(e *gm.Event) {
		got <- bytes.Clone(e.Message)
		from <- e.SenderNode
		_ = b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	defer lb.Stop()
	ca := newCompletions()
	la := startLoop(a, nil)
	defer la.Stop()
	for i, n := range lengths {
		msg := pattern(n, uint64(i))
		if err := a.SendWithCallback(msg, gm.MinSizeForLength(n), n, gm.LowPriority, b.NodeID(), 4, ca.cb, i); err != nil {
			t.Fatal(err)
		}
		select {
		case g := <-got:
			if !bytes.Equal(g, msg) || <-from != a.NodeID() {
				t.Fatalf("message %d (%d bytes) arrived changed", i, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d (%d bytes) did not arrive", i, n)
		}
	}
	for _, cp := range ca.wait(t, len(lengths), 10*time.Second) {
		if cp.st != gm.Success {
			t.Fatalf("send %d: %v", cp.id, cp.st)
		}
	}

	// Loopback between two keyed ports of one host.
	if err := a2.ProvideReceiveBuffer(make([]byte, 64), gm.MinSizeForLength(8), gm.LowPriority, 0); err != nil {
		t.Fatal(err)
	}
	got2 := make(chan []byte, 1)
	l2 := startLoop(a2, func(e *gm.Event) { got2 <- bytes.Clone(e.Message) })
	defer l2.Stop()
	if err := a.SendWithCallback([]byte("loopback"), gm.MinSizeForLength(8), 8, gm.LowPriority, a.NodeID(), 6, ca.cb, 50); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got2:
		if string(g) != "loopback" {
			t.Fatalf("loopback message %q", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("loopback message did not arrive")
	}

	// Replay: host2, without the key, sends every frame A sealed, unchanged.
	// The link accepts them (the key does not detect replays); the
	// sessions and sequence numbers above it deliver nothing twice.
	replay := sent()
	before := b.Info().Link
	if err := c.Hosts[2].Do(func() error {
		lk, err := link.Open(c.Hosts[2].Ifaces[0], nil)
		if err != nil {
			return err
		}
		defer lk.Close()
		for _, f := range replay {
			if err := lk.Send(f); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		t.Fatalf("a replayed frame was delivered again (%d bytes)", len(g))
	case g := <-got2:
		t.Fatalf("a replayed loopback frame was delivered again: %q", g)
	case <-time.After(500 * time.Millisecond):
	}
	if after := b.Info().Link; after.AuthFailures != before.AuthFailures {
		t.Fatalf("replayed sealed frames failed the MAC: %+v", after)
	}
	t.Logf("replayed %d sealed frames of host0: none delivered again", len(replay))

	// The strangers: no key, and the key in another partition.
	cx := newCompletions()
	lx := startLoop(x, nil)
	defer lx.Stop()
	ly := startLoop(y, nil)
	defer ly.Stop()
	if err := x.SendWithCallback([]byte("intruder"), gm.MinSizeForLength(8), 8, gm.LowPriority, b.NodeID(), 4, cx.cb, 100); err != nil {
		t.Fatal(err)
	}
	if err := y.SendWithCallback([]byte("neighbor"), gm.MinSizeForLength(8), 8, gm.LowPriority, b.NodeID(), 4, cx.cb, 101); err != nil {
		t.Fatal(err)
	}
	for _, cp := range cx.wait(t, 2, 20*time.Second) {
		if cp.st == gm.Success {
			t.Fatalf("send %d from outside the cluster succeeded", cp.id)
		}
		t.Logf("send %d from outside the cluster: %v", cp.id, cp.st)
	}
	select {
	case g := <-got:
		t.Fatalf("host1 delivered %q from outside the cluster", g)
	case <-time.After(100 * time.Millisecond):
	}
	li := b.Info().Link
	if li.AuthFailures == 0 || li.ForeignPartition == 0 {
		t.Fatalf("host1's link counters: %+v", li)
	}
	t.Logf("host1 dropped %d frames without a valid MAC and %d of partition 2", li.AuthFailures, li.ForeignPartition)
}

// writeKeyFile writes a cluster key file with content and returns its path.
func writeKeyFile(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "cluster.key")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
