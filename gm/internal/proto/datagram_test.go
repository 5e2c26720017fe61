package proto

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// dgPair returns a (node 1, port 2) and b (node 2, port 4) on n, and a
// receiver of b that keeps its buffers (nothing re-provided).
func dgPair(n *simnet) (a, b *Engine, rb *receiver) {
	a = n.add(1, 2, nil)
	b = n.add(2, 4, nil)
	return a, b, &receiver{e: b, keep: true}
}

// runIdle steps n until nothing is left to do.
func runIdle(n *simnet) {
	for i := 0; i < 100000 && n.step(); i++ {
	}
}

// TestDatagramDeliver: a datagram is one frame, completes Success as soon
// as it is handed to the link, arrives as an ordinary receive event in a
// buffer of its size and priority (PEER and HIGH types as for messages),
// and is never acknowledged.
func TestDatagramDeliver(t *testing.T) {
	n := newSimnet(t, 51)
	a, b, rb := dgPair(n)
	peerA := n.add(1, 4, nil) // node 1's port 4: a peer of b
	for _, pri := range []uint8{0, 1} {
		if err := b.Provide(make([]byte, 120), 7, pri, 30+pri); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Provide(make([]byte, 16), 4, 0, 40); err != nil {
		t.Fatal(err)
	}
	msg := pattern(90, 1)
	if err := a.Datagram(n.now, msg, 7, len(msg), 0, 2, 4, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.Datagram(n.now, msg[:50], 7, 50, 1, 2, 4, nil, 2); err != nil {
		t.Fatal(err)
	}
	if err := peerA.Datagram(n.now, msg[:8], 4, 8, 0, 2, 4, nil, 3); err != nil {
		t.Fatal(err)
	}
	if n.sent != 3 {
		t.Fatalf("%d frames for 3 datagrams", n.sent)
	}
	var comps []completion
	drainCompletions(a, &comps)
	drainCompletions(peerA, &comps)
	if len(comps) != 3 || comps[0] != (completion{1, StatusSuccess}) || comps[1] != (completion{2, StatusSuccess}) || comps[2] != (completion{3, StatusSuccess}) {
		t.Fatalf("completions before any delivery: %+v", comps)
	}
	if a.SendTokens().Free() != 61 {
		t.Fatal("the datagram's token is not back")
	}
	runIdle(n)
	if n.sent != 3 {
		t.Fatalf("%d frames sent in all: datagrams are acknowledged or resent", n.sent)
	}
	rb.poll()
	if len(rb.got) != 3 {
		t.Fatalf("%d datagrams received; stats %+v", len(rb.got), b.Stats())
	}
	want := []struct {
		typ       uint8
		pri, tag  uint8
		data      []byte
		node      uint32
		port, siz uint8
	}{
		{EventRecv, 0, 30, msg, 1, 2, 7},
		{EventHighRecv, 1, 31, msg[:50], 1, 2, 7},
		{EventPeerRecv, 0, 40, msg[:8], 1, 4, 4},
	}
	for i, w := range want {
		ev := rb.got[i].ev
		if ev.Type != w.typ || ev.Priority != w.pri || ev.Tag != w.tag || ev.SenderNode != w.node || ev.SenderPort != w.port ||
			ev.Size != w.siz || !bytes.Equal(rb.got[i].data, w.data) || int(ev.Length) != len(w.data) {
			t.Fatalf("datagram %d: %+v", i, ev)
		}
	}
	if s := b.Stats(); s.DatagramsReceived != 3 || s.AcksSent != 0 || s.NacksSent != 0 {
		t.Fatalf("target stats %+v", s)
	}
}

// TestDatagramDropped: without a buffer of its size and priority a
// datagram is dropped and counted, and never arrives later; a lost
// datagram is not resent.
func TestDatagramDropped(t *testing.T) {
	n := newSimnet(t, 52)
	a, b, rb := dgPair(n)
	if err := b.Provide(make([]byte, 64), 7, 1, 0); err != nil { // high priority only
		t.Fatal(err)
	}
	if err := a.Datagram(n.now, pattern(20, 2), 7, 20, 0, 2, 4, nil, 1); err != nil {
		t.Fatal(err)
	}
	runIdle(n)
	if err := b.Provide(make([]byte, 64), 7, 0, 0); err != nil {
		t.Fatal(err)
	}
	n.lose = func([]byte) bool { return true }
	if err := a.Datagram(n.now, pattern(20, 3), 7, 20, 0, 2, 4, nil, 2); err != nil {
		t.Fatal(err)
	}
	runIdle(n)
	n.lose = nil
	n.now += time.Second
	runIdle(n)
	rb.poll()
	if len(rb.got) != 0 || n.sent != 2 {
		t.Fatalf("%d received, %d frames sent", len(rb.got), n.sent)
	}
	if s := b.Stats(); s.DatagramsNoBuffer != 1 || s.DatagramsReceived != 0 {
		t.Fatalf("target stats %+v", s)
	}
	var comps []completion
	drainCompletions(a, &comps)
	if len(comps) != 2 || comps[1] != (completion{2, StatusSuccess}) {
		t.Fatalf("%+v", comps)
	}
}

// TestDatagramReplay: a frame received twice (duplicated by the network,
// or replayed later by anyone) is delivered once; datagrams reordered
// within the window are delivered, older ones dropped; a later
// incarnation of the sender, whose counter starts higher, is accepted at
// once.
func TestDatagramReplay(t *testing.T) {
	n := newSimnet(t, 53)
	a, b, rb := dgPair(n)
	for range 200 {
		if err := b.Provide(make([]byte, 64), 7, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	var frames [][]byte
	n.lose = func(f []byte) bool { frames = append(frames, bytes.Clone(f)); return true }
	var comps []completion
	for k := range 100 {
		if err := a.Datagram(n.now, []byte{byte(k)}, 7, 1, 0, 2, 4, nil, k); err != nil {
			t.Fatal(err)
		}
		drainCompletions(a, &comps)
	}
	runIdle(n)
	n.lose = nil
	// Deliver 99, then 40..98 (within the window of 64 below 99: 35..98
	// are accepted once), each twice, then everything again.
	in := func(f []byte) { b.Input(n.now, f); b.Tick(n.now) }
	in(frames[99])
	for k := 30; k < 99; k++ {
		in(frames[k])
		in(frames[k])
	}
	for _, f := range frames {
		in(f)
	}
	rb.poll()
	var got []byte
	for _, r := range rb.got {
		got = append(got, r.data...)
	}
	var want []byte
	want = append(want, 99)
	for k := 36; k < 99; k++ {
		want = append(want, byte(k))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	s := b.Stats()
	if s.DatagramsReceived != uint64(len(want)) || s.DatagramsReplayed != uint64(1+2*69+100-len(want)) {
		t.Fatalf("received %d, replays dropped %d", s.DatagramsReceived, s.DatagramsReplayed)
	}

	// A new incarnation of port 2 of node 1, its counter above the old
	// one's: accepted; one whose counter went back (a clock stepped back):
	// dropped until it passes the old one.
	h, err := wire.ParseFrame(frames[99], wire.EtherType)
	if err != nil {
		t.Fatal(err)
	}
	c := uint64(h.Session())<<32 | uint64(h.Seq())
	for _, tt := range []struct {
		start uint64
		ok    bool
	}{{c + 1000, true}, {c - 1000, false}} {
		a2 := n.add(1, 2, nil)
		a2.SetDatagramCounter(tt.start)
		rb.got = nil
		if err := a2.Datagram(n.now, []byte{7}, 7, 1, 0, 2, 4, nil, 0); err != nil {
			t.Fatal(err)
		}
		runIdle(n)
		rb.poll()
		if (len(rb.got) == 1) != tt.ok {
			t.Fatalf("new incarnation starting at %d (old at %d): %d received", tt.start, c, len(rb.got))
		}
	}
}

// TestDatagramWindow: the anti-replay window by itself.
func TestDatagramWindow(t *testing.T) {
	var w dgWindow
	seq := []struct {
		c  uint64
		ok bool
	}{
		{1000, true}, {1000, false}, {999, true}, {999, false}, {937, true}, {936, false}, {1001, true}, {937, false},
		{938, true}, {1100, true}, {1037, true}, {1036, false}, {1001, false}, {1 << 40, true}, {1<<40 - 63, true}, {1<<40 - 64, false},
		{^uint64(0), true}, {^uint64(0) - 1, true}, {1 << 40, false},
	}
	for i, s := range seq {
		if got := w.accept(s.c); got != s.ok {
			t.Fatalf("step %d: accept(%d) = %v", i, s.c, got)
		}
	}
}

// TestDatagramMisuse: errors, with nothing sent and no token taken.
func TestDatagramMisuse(t *testing.T) {
	n := newSimnet(t, 54)
	a, _, _ := dgPair(n)
	msg := make([]byte, 200)
	for _, tt := range []struct {
		size        uint8
		length      int
		pri, port   uint8
		node        uint32
		want        error
		description string
	}{
		{2, 1, 0, 4, 2, ErrSize, "size 2"},
		{32, 1, 0, 4, 2, ErrSize, "size 32"},
		{7, 1, 2, 4, 2, ErrPriority, "priority 2"},
		{7, 1, 0, 16, 2, ErrPort, "port 16"},
		{7, -1, 0, 4, 2, ErrLength, "length -1"},
		{4, 9, 0, 4, 2, ErrLength, "longer than its size class"},
		{8, 101, 0, 4, 2, ErrLength, "longer than a frame (SegLen 100)"},
		{8, 201, 0, 4, 2, ErrLength, "longer than msg"},
		{7, 1, 0, 4, 99, ErrNode, "unknown node"},
	} {
		if err := a.Datagram(n.now, msg, tt.size, tt.length, tt.pri, tt.node, tt.port, nil, 0); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.description, err, tt.want)
		}
	}
	if a.DatagramMax() != 100 {
		t.Fatal(a.DatagramMax())
	}
	if err := a.Datagram(n.now, msg, 8, 100, 0, 2, 4, nil, 0); err != nil {
		t.Fatal(err)
	}
	for a.SendTokens().TryAcquire() {
	}
	if err := a.Datagram(n.now, msg, 8, 1, 0, 2, 4, nil, 0); !errors.Is(err, ErrNoSendToken) {
		t.Fatalf("no token: %v", err)
	}
	if n.sent != 1 {
		t.Fatalf("%d frames sent", n.sent)
	}
}

// failOut is an Out whose sends fail.
type failOut struct{}

var errFull = errors.New("ring full")

func (failOut) Send([]byte) error                 { return errFull }
func (failOut) SendBatch(f [][]byte) (int, error) { return 0, errFull }

// TestDatagramNotSent: a datagram the link refuses returns an error that
// wraps the link's, and takes no token.
func TestDatagramNotSent(t *testing.T) {
	e := New(Config{NodeID: 1, Port: 2, MAC: mac(1), SegLen: 100,
		Resolve: func(id uint32) ([6]byte, bool) { return mac(int(id)), true }}, failOut{})
	err := e.Datagram(0, []byte("x"), 4, 1, 0, 2, 4, nil, 0)
	if !errors.Is(err, ErrDatagramNotSent) || !errors.Is(err, errFull) || e.SendTokens().Free() != 61 || e.Completions() != 0 {
		t.Fatalf("%v, tokens %d, completions %d", err, e.SendTokens().Free(), e.Completions())
	}
}

// TestDatagramAllocs: sending and receiving a datagram allocates nothing
// in the steady state.
func TestDatagramAllocs(t *testing.T) {
	n := newSimnet(t, 55)
	a, b, _ := dgPair(n)
	buf := make([]byte, 64)
	msg := make([]byte, 50)
	var ev Event
	round := func() {
		if err := b.Provide(buf, 7, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := a.Datagram(n.now, msg, 7, 50, 0, 2, 4, nil, nil); err != nil {
			t.Fatal(err)
		}
		f := n.queue[0]
		n.queue = n.queue[:0]
		b.Input(n.now, f)
		for b.PopEvent(&ev) {
		}
		for {
			if _, _, _, ok := a.PopCompletion(); !ok {
				break
			}
		}
		for a.PopEvent(&ev) {
		}
	}
	round()
	n.queue = make([][]byte, 0, 4)
	if allocs := testing.AllocsPerRun(100, func() {
		n.queue = n.queue[:0]
		round()
	}); allocs > 1 { // the simnet's copy of the frame
		t.Fatalf("%v allocations per datagram", allocs)
	}
}
