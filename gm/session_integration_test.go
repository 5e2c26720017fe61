package gm_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/wire"
)

// TestIntegrationForgedSession mounts issue 12's attack on the real path:
// while host0's port sends a verified stream to host1's port, a third
// host, which knows only node ids, ports and MACs (and the first protocol
// version's initial sequence number formula), sends host1 OPEN and DATA
// frames claiming host0's node id and port, for sessions of its own, with
// a size class host1 has buffers for, from its own MAC and with host0's
// MAC spoofed. Every message arrives once, in order, nothing of the forger
// is delivered, and every send succeeds.
func TestIntegrationForgedSession(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3})
	pr := pairOn(t, c, nil)
	const count, size, length = 240, 10, 600
	var mu sync.Mutex
	var got [][]byte
	lb := startLoop(pr.b, func(e *gm.Event) {
		mu.Lock()
		got = append(got, bytes.Clone(e.Message))
		mu.Unlock()
		_ = pr.b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	defer lb.Stop()
	la := startLoop(pr.a, nil)
	defer la.Stop()
	for i := 0; i < 16; i++ {
		_ = pr.b.ProvideReceiveBuffer(make([]byte, 1016), size, gm.LowPriority, 0)
	}

	forger := c.Hosts[2]
	var fl *link.Link
	if err := forger.Do(func() error {
		var err error
		fl, err = link.Open(forger.Ifaces[0], &link.Config{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	dst := [6]byte(c.Hosts[1].MACs[0])
	forged := bytes.Repeat([]byte{0xEE}, 100)
	forge := func(round int) {
		src := [6]byte(forger.MACs[0])
		if round%2 == 1 {
			src = [6]byte(c.Hosts[0].MACs[0]) // host0's MAC spoofed
		}
		for _, sess := range []uint32{0x5eed5eed + uint32(round), 1, 0x9e3779b1} {
			o := wire.HeaderFields{Type: wire.TypeOpen, TargetPort: 4, SourcePort: 2,
				TargetNode: uint32(pr.bn), SourceNode: uint32(pr.an), Session: sess}
			if err := fl.Send(wire.AppendFrame(nil, dst, src, wire.EtherType, &o, nil)); err != nil {
				t.Error(err)
			}
			for _, seq := range []uint32{sess * 0x9E3779B1, 0, 1, sess} {
				h := wire.HeaderFields{Type: wire.TypeData, TargetPort: 4, SourcePort: 2,
					TargetNode: uint32(pr.bn), SourceNode: uint32(pr.an), Session: sess, Seq: seq,
					Size: size, MsgLen: uint32(len(forged))}
				if err := fl.Send(wire.AppendFrame(nil, dst, src, wire.EtherType, &h, forged)); err != nil {
					t.Error(err)
				}
			}
		}
	}

	comps := newCompletions()
	for i := 0; i < count; i++ {
		if i%20 == 10 {
			forge(i / 20)
		}
		if i%40 == 39 {
			comps.wait(t, i, 20*time.Second) // stay within the send tokens
		}
		if err := pr.a.SendWithCallback(pattern(length, uint64(i)), size, length, gm.LowPriority, pr.bn, 4, comps.cb, i); err != nil {
			t.Fatal(err)
		}
	}
	for _, cp := range comps.wait(t, count, 20*time.Second) {
		if cp.st != gm.Success {
			t.Fatalf("send %d: %v", cp.id, cp.st)
		}
	}
	waitFor(t, 10*time.Second, "every message", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= count })
	time.Sleep(100 * time.Millisecond) // a duplicate would arrive by now
	mu.Lock()
	defer mu.Unlock()
	if len(got) != count {
		t.Fatalf("%d messages delivered, want %d", len(got), count)
	}
	for i, g := range got {
		if !bytes.Equal(g, pattern(length, uint64(i))) {
			t.Fatalf("message %d is not the %d-th sent (forged: %v)", i, i, bytes.HasPrefix(g, forged[:8]))
		}
	}
	st := pr.b.Stats()
	if st.StaleDropped == 0 || st.OpensReceived == 0 {
		t.Fatalf("the forged frames did not arrive: %+v", st)
	}
	t.Logf("receiver stats: %d OPENs received, %d sessions started, %d frames of sessions not followed dropped",
		st.OpensReceived, st.SessionsStarted, st.StaleDropped)
}
