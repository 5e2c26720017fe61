package gm_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
)

// TestIntegrationGetWhileSendsStalled: between two netns hosts, the
// target (b) spends every send token on messages to the requester (a),
// which provides no receive buffer for them, so b's stream to a probes and
// holds them. a's gets of both priorities, 0 bytes to 1 MiB, are served
// meanwhile, byte for byte (GM's NIC serves gets without the target
// program, so its stalled sends must not hold them: the replies travel on
// b's reply stream, docs/PROTOCOL.md §7.6). None of b's sends completed
// while the gets ran. Then a provides buffers and b's messages arrive, all
// of them, in order.
func TestIntegrationGetWhileSendsStalled(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	const regLen = 3 << 20
	mem, ptr := rdmaTarget(t, pr.b, regLen, 7)
	if err := pr.b.AllowRemoteMemoryAccess(); err != nil {
		t.Fatal(err)
	}
	syncWith(pr.b)

	var mu sync.Mutex
	var got [][]byte
	la := startLoop(pr.a, func(e *gm.Event) {
		mu.Lock()
		got = append(got, bytes.Clone(e.Message))
		mu.Unlock()
		_ = pr.a.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	defer la.Stop()
	lb := startLoop(pr.b, nil)
	defer lb.Stop()

	// b's messages: size class 5, which a provides no buffer of yet.
	cb := newCompletions()
	sends := pr.b.NumSendTokens()
	for i := range sends {
		msg := []byte{byte(i), byte(i >> 8), 0xA5}
		if err := pr.b.SendWithCallback(msg, 5, len(msg), gm.LowPriority, pr.an, 2, cb.cb, i); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "a to refuse b's messages (no buffer)", func() bool { return pr.a.Stats().NacksSentNoBuffer > 0 })

	ca := newCompletions()
	bufs := make([][]byte, len(rdmaSizes))
	offs := make([]int, len(rdmaSizes))
	off := 3
	for k, l := range rdmaSizes {
		bufs[k], offs[k] = make([]byte, l), off
		pri := gm.Priority(k % 2)
		if err := pr.a.Get(ptr.Add(off), bufs[k], l, pri, pr.bn, 4, ca.cb, k); err != nil {
			t.Fatal(err)
		}
		off += l + 5
	}
	for _, x := range ca.wait(t, len(rdmaSizes), 30*time.Second) {
		if x.st != gm.Success {
			t.Fatalf("get %d: %v", x.id, x.st)
		}
	}
	for k, l := range rdmaSizes {
		if !bytes.Equal(bufs[k], mem[offs[k]:offs[k]+l]) {
			t.Fatalf("get %d (%d bytes) differs from the target's memory", k, l)
		}
	}
	if s := cb.snapshot(); len(s) != 0 {
		t.Fatalf("b's sends completed while the gets ran (the test needs them held): %v", s)
	}
	mu.Lock()
	n := len(got)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("a received %d messages before it provided buffers", n)
	}

	for range 16 {
		if err := pr.a.ProvideReceiveBuffer(make([]byte, 32), 5, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i, x := range cb.wait(t, sends, 60*time.Second) {
		if x != (completion{i, gm.Success}) {
			t.Fatalf("b's send %d: %+v", i, x)
		}
	}
	waitFor(t, 10*time.Second, "a to receive b's messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= sends })
	mu.Lock()
	defer mu.Unlock()
	for i, m := range got {
		if !bytes.Equal(m, []byte{byte(i), byte(i >> 8), 0xA5}) {
			t.Fatalf("a's message %d is %x: out of order or corrupt", i, m)
		}
	}
	if len(got) != sends {
		t.Fatalf("a received %d messages, want %d", len(got), sends)
	}
	t.Logf("A %+v; B %+v", pr.a.Stats(), pr.b.Stats())
}
