package gm_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/wire"
)

// TestIntegrationDatagram: with a cluster key, datagrams of every length
// up to a frame's payload go from host0 to host1 (each delivered once,
// unchanged, as an ordinary receive event); host2 then replays every frame
// host0 sealed, unchanged, and sends a datagram of its own without the
// key: nothing is delivered, the replays are counted as such and the
// stranger's frame fails the MAC.
func TestIntegrationDatagram(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3})
	m := writeMap(t, c)
	keyFile := writeKeyFile(t, "datagram-cluster-key-0123456789abcdef\n")
	key, err := link.LoadAuth(keyFile, 1)
	if err != nil {
		t.Fatal(err)
	}
	ca := testConfig(c.Hosts[0], m)
	ca.ClusterKeyFile, ca.Partition = keyFile, 1
	sealed := sealedSends(t, ca, key, func(h wire.Header) bool { return h.Type() == wire.TypeDatagram })
	cb := testConfig(c.Hosts[1], m)
	cb.ClusterKeyFile, cb.Partition = keyFile, 1
	a := openPort(t, c.Hosts[0], 2, ca)
	b := openPort(t, c.Hosts[1], 4, cb)
	x := openPort(t, c.Hosts[2], 2, testConfig(c.Hosts[2], m)) // no key

	max := a.DatagramMax()
	lengths := []int{0, 1, 8, 100, 1000, max}
	size := gm.MinSizeForLength(max)
	for range 2 * len(lengths) {
		if err := b.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan []byte, 64)
	lb := startLoop(b, func(e *gm.Event) { got <- bytes.Clone(e.Message) })
	defer lb.Stop()
	la := startLoop(a, nil)
	defer la.Stop()
	comps := newCompletions()
	for i, n := range lengths {
		msg := pattern(n, uint64(i))
		if err := a.DatagramSend(msg, size, n, gm.LowPriority, b.NodeID(), 4, comps.cb, i); err != nil {
			t.Fatal(err)
		}
		select {
		case g := <-got:
			if !bytes.Equal(g, msg) {
				t.Fatalf("datagram %d (%d bytes) arrived changed", i, n)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("datagram %d (%d bytes) did not arrive", i, n)
		}
	}
	for _, x := range comps.wait(t, len(lengths), 5*time.Second) {
		if x.st != gm.Success {
			t.Fatalf("datagram %d: %v", x.id, x.st)
		}
	}

	// Replays, from a host without the key, and a stranger's datagram.
	replay := sealed()
	if len(replay) != len(lengths) {
		t.Fatalf("%d datagram frames captured", len(replay))
	}
	before := b.Stats()
	beforeLink := b.Info().Link
	if err := c.Hosts[2].Do(func() error {
		lk, err := link.Open(c.Hosts[2].Ifaces[0], nil)
		if err != nil {
			return err
		}
		defer lk.Close()
		for range 2 {
			for _, f := range replay {
				if err := lk.Send(f); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lx := startLoop(x, nil)
	defer lx.Stop()
	if err := x.DatagramSend([]byte("intruder"), size, 8, gm.LowPriority, b.NodeID(), 4, nil, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the replays counted", func() bool {
		return b.Stats().DatagramsReplayed-before.DatagramsReplayed == uint64(2*len(replay))
	})
	waitFor(t, 5*time.Second, "the stranger's frame counted", func() bool {
		return b.Info().Link.AuthFailures > beforeLink.AuthFailures
	})
	select {
	case g := <-got:
		t.Fatalf("delivered %d bytes from a replay or a stranger", len(g))
	case <-time.After(200 * time.Millisecond):
	}
	if s := b.Stats(); s.DatagramsReceived != uint64(len(lengths)) {
		t.Fatalf("%d datagrams received in all", s.DatagramsReceived)
	}
}
