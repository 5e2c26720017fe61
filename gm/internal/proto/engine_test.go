package proto

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

var debugNet = false

// simnet is an in-memory Ethernet segment with virtual time and optional
// loss, duplication and reordering.
type simnet struct {
	t       testing.TB
	now     Time
	engines []*Engine
	queue   [][]byte
	rng     *rand.Rand
	drop    float64
	dup     float64
	reorder float64
	cut     bool                // drop everything
	lose    func(f []byte) bool // if set, frames it reports true for are lost
	sent    int
	slots   int  // if > 0, engines added get a SlotOut with this many ring slots
	next    bool // with slots: the SlotOut is a SlotNexter (simSlotNextOut)
	nexts   int  // TxCommitNext calls (all engines)
}

type simOut struct {
	n *simnet
}

func (o simOut) Send(f []byte) error {
	o.n.sent++
	o.n.queue = append(o.n.queue, append([]byte(nil), f...))
	return nil
}

func (o simOut) SendBatch(fs [][]byte) (int, error) {
	for _, f := range fs {
		_ = o.Send(f)
	}
	return len(fs), nil
}

// simSlotOut is a SlotOut over the simulated network: a ring of a few
// slots whose committed frames go out on Flush. Every busyEvery-th Flush
// fails (the frames stay queued), as a link's kick can.
type simSlotOut struct {
	simOut
	buf       [][]byte
	pending   [][]byte
	flushes   int
	busyEvery int
}

var errSimBusy = errors.New("sim: transmit ring busy")

func (o *simSlotOut) TxSlot() []byte {
	if len(o.pending) == len(o.buf) {
		return nil
	}
	return o.buf[len(o.pending)]
}

func (o *simSlotOut) TxCommit(n int) error {
	o.pending = append(o.pending, append([]byte(nil), o.buf[len(o.pending)][:n]...))
	return nil
}

func (o *simSlotOut) Flush() error {
	o.flushes++
	if o.busyEvery > 0 && o.flushes%o.busyEvery == 0 {
		return errSimBusy
	}
	for _, f := range o.pending {
		o.n.sent++
		o.n.queue = append(o.n.queue, f)
	}
	o.pending = o.pending[:0]
	return nil
}

// simSlotNextOut is a simSlotOut that is also a SlotNexter. It checks
// that every committed slot holds the frame the engine built in it: it
// clears the slots a Flush sent, so a frame built in a slot lent before
// another call of the SlotOut (whose ring head may have moved) is
// committed as an empty, invalid frame and fails the test.
type simSlotNextOut struct {
	*simSlotOut
}

func (o simSlotNextOut) TxCommit(n int) error {
	if _, err := wire.ParseFrameCRC(o.buf[len(o.pending)][:n], wire.EtherType); err != nil {
		o.n.t.Fatalf("committed slot %d holds no valid frame: %v", len(o.pending), err)
	}
	return o.simSlotOut.TxCommit(n)
}

func (o simSlotNextOut) TxCommitNext(n int) ([]byte, error) {
	o.n.nexts++
	if err := o.TxCommit(n); err != nil {
		return nil, err
	}
	return o.TxSlot(), nil
}

func (o simSlotNextOut) Flush() error {
	k := len(o.pending)
	if err := o.simSlotOut.Flush(); err != nil {
		return err
	}
	for _, b := range o.buf[:k] {
		clear(b)
	}
	return nil
}

func newSimnet(t testing.TB, seed uint64) *simnet {
	return &simnet{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: time.Second}
}

func mac(i int) [6]byte { return [6]byte{2, 0, 0, 0, 0, byte(i)} }

// add creates an engine for node (1-based) and port.
func (n *simnet) add(node uint32, port uint8, mod func(*Config)) *Engine {
	cfg := Config{
		NodeID: node, Port: port, MAC: mac(int(node)), SegLen: 100,
		ProgressTimeout: 200 * time.Millisecond, LivenessTimeout: 300 * time.Millisecond,
		Resolve: func(id uint32) ([6]byte, bool) { return mac(int(id)), id >= 1 && id <= 9 },
	}
	if mod != nil {
		mod(&cfg)
	}
	var out Out = simOut{n}
	if n.slots > 0 {
		cfg.ZeroCopyMin = 1
		so := &simSlotOut{simOut: simOut{n}, buf: make([][]byte, n.slots), busyEvery: 7}
		for i := range so.buf {
			so.buf[i] = make([]byte, 2048)
		}
		out = so
		if n.next {
			out = simSlotNextOut{so}
		}
	}
	e := New(cfg, out)
	n.engines = append(n.engines, e)
	return e
}

func (n *simnet) replace(old, e *Engine) {
	for i, x := range n.engines {
		if x == old {
			n.engines[i] = e
		}
	}
}

// step delivers one frame, or advances time to the next deadline. It
// reports false when nothing at all is left to do.
func (n *simnet) step() bool {
	if len(n.queue) > 0 {
		i := 0
		if n.reorder > 0 && len(n.queue) > 1 && n.rng.Float64() < n.reorder {
			i = 1 + n.rng.IntN(min(len(n.queue)-1, 8))
		}
		f := n.queue[i]
		n.queue = append(n.queue[:i], n.queue[i+1:]...)
		n.now += 2 * time.Microsecond
		if n.cut || (n.drop > 0 && n.rng.Float64() < n.drop) || (n.lose != nil && n.lose(f)) {
			if h, err := wire.ParseFrame(f, 0x88b5); err == nil && debugNet {
				println("DROP", n.now, h.Type().String(), h.Seq(), h.Ack())
			}
			return true
		}
		copies := 1
		if n.dup > 0 && n.rng.Float64() < n.dup {
			copies = 2
		}
		for _, e := range n.engines {
			if e.cfg.MAC == [6]byte(f[0:6]) {
				if debugNet {
					h, _ := wire.ParseFrame(f, 0x88b5)
					println("DELIVER", n.now, h.Type().String(), h.Seq(), h.Ack(), h.Flags().String())
				}
				for c := 0; c < copies; c++ {
					e.Input(n.now, f)
				}
				e.Tick(n.now)
			}
		}
		return true
	}
	var d Time
	for _, e := range n.engines {
		if dl := e.NextDeadline(); dl != 0 && (d == 0 || dl < d) {
			d = dl
		}
	}
	if d == 0 {
		return false
	}
	if debugNet {
		for _, e := range n.engines {
			println("DEADLINE", e.NextDeadline())
		}
	}
	if d > n.now {
		n.now = d
	}
	for _, e := range n.engines {
		e.Tick(n.now)
	}
	// Tick must act on every deadline that is due: one that stays due
	// would have the caller's loop spin at this instant.
	for _, e := range n.engines {
		if dl := e.NextDeadline(); dl != 0 && dl <= n.now {
			n.t.Fatalf("engine node %d port %d: deadline %v still due after Tick at %v%s",
				e.cfg.NodeID, e.cfg.Port, time.Duration(dl), time.Duration(n.now), n.dump())
		}
	}
	return true
}

// dump describes every engine (for failures).
func (n *simnet) dump() string {
	s := ""
	for _, e := range n.engines {
		s += "\n" + e.Dump(n.now)
	}
	return s
}

// run steps until cond holds; it fails the test if the network goes idle
// or virtual time passes limit first.
func (n *simnet) run(limit time.Duration, cond func() bool) {
	n.t.Helper()
	end := n.now + limit
	for !cond() {
		if n.now > end {
			n.t.Fatalf("condition not met within %v of virtual time%s", limit, n.dump())
		}
		if !n.step() {
			n.t.Fatalf("network idle before condition was met%s", n.dump())
		}
	}
}

type completion struct {
	id int
	st Status
}

// drain collects completions of e into out.
func drainCompletions(e *Engine, out *[]completion) {
	var ev Event
	for e.PopEvent(&ev) {
		_ = ev
	}
	for {
		_, ctx, st, ok := e.PopCompletion()
		if !ok {
			return
		}
		*out = append(*out, completion{ctx.(int), st})
	}
}

type received struct {
	ev   Event
	data []byte
}

// receiver provides buffers on e and collects received messages,
// re-providing each buffer.
type receiver struct {
	e    *Engine
	got  []received
	keep bool // do not re-provide
}

func (r *receiver) poll() {
	var ev Event
	for r.e.PopEvent(&ev) {
		if ev.Type == EventSentTokens {
			continue
		}
		var d []byte
		if ev.FastLen > 0 || (ev.Type >= EventFastRecv && ev.Type <= EventFastHighPeerRecv) {
			d = append([]byte(nil), ev.Fast[:ev.FastLen]...)
		} else {
			d = append([]byte(nil), ev.Buffer[:ev.Length]...)
		}
		r.got = append(r.got, received{ev, d})
		if !r.keep {
			if err := r.e.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag); err != nil {
				panic(err)
			}
		}
	}
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i>>8)
	}
	return b
}

func TestSizeClassesAndSegmentation(t *testing.T) {
	n := newSimnet(t, 1)
	a := n.add(1, 2, nil)
	b := n.add(2, 4, nil)
	r := &receiver{e: b}
	var comps []completion
	rng := rand.New(rand.NewPCG(5, 6))
	type msg struct {
		size uint8
		pri  uint8
		data []byte
	}
	var want []msg
	for size := uint8(3); size <= 15; size++ {
		for pri := uint8(0); pri < 2; pri++ {
			for i := 0; i < 2; i++ {
				if err := b.Provide(make([]byte, token.MaxLengthForSize(size)), size, pri, size); err != nil {
					t.Fatal(err)
				}
			}
			max := token.MaxLengthForSize(size)
			for _, l := range []int{0, 1, max, rng.IntN(max + 1)} {
				if l > max {
					continue
				}
				want = append(want, msg{size, pri, pattern(l, len(want))})
			}
		}
	}
	id := 0
	for _, m := range want {
		for a.SendTokens().Free() == 0 {
			n.run(time.Second, func() bool { drainCompletions(a, &comps); r.poll(); return a.SendTokens().Free() > 0 })
		}
		if err := a.Send(n.now, m.data, m.size, len(m.data), m.pri, 2, 4, nil, id); err != nil {
			t.Fatal(err)
		}
		id++
		n.run(time.Second, func() bool { r.poll(); drainCompletions(a, &comps); return true })
	}
	n.run(5*time.Second, func() bool {
		r.poll()
		drainCompletions(a, &comps)
		return len(comps) == len(want) && len(r.got) == len(want)
	})
	// Per priority, order must match.
	for pri := uint8(0); pri < 2; pri++ {
		var w []msg
		var g []received
		for _, m := range want {
			if m.pri == pri {
				w = append(w, m)
			}
		}
		for _, x := range r.got {
			if x.ev.Priority == pri {
				g = append(g, x)
			}
		}
		if len(w) != len(g) {
			t.Fatalf("pri %d: got %d messages, want %d", pri, len(g), len(w))
		}
		for i := range w {
			if !bytes.Equal(w[i].data, g[i].data) || g[i].ev.Size != w[i].size || g[i].ev.Tag != w[i].size {
				t.Fatalf("pri %d message %d: size %d len %d, got size %d len %d", pri, i, w[i].size, len(w[i].data), g[i].ev.Size, len(g[i].data))
			}
			fast := len(w[i].data) <= MaxFastRecvBytes && len(w[i].data) <= 100
			isFast := g[i].ev.Type >= EventFastRecv
			if fast != isFast {
				t.Fatalf("message %d len %d: event type %d", i, len(w[i].data), g[i].ev.Type)
			}
		}
	}
	for _, c := range comps {
		if c.st != StatusSuccess {
			t.Fatalf("completion %v", c)
		}
	}
}

// streamTest sends count messages of random size from a to b over an
// impaired network and checks exactly-once in-order delivery.
func streamTest(t *testing.T, n *simnet, count int, maxLen int) {
	a := n.add(1, 2, func(c *Config) { c.Window = 64 })
	b := n.add(2, 2, nil)
	r := &receiver{e: b}
	for i := 0; i < 40; i++ {
		if err := b.Provide(make([]byte, maxLen), token.MinSizeForLength(maxLen), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	var comps []completion
	rng := rand.New(rand.NewPCG(9, 9))
	var want [][]byte
	for len(want) < count {
		if a.SendTokens().Free() == 0 {
			n.run(30*time.Second, func() bool { drainCompletions(a, &comps); r.poll(); return a.SendTokens().Free() > 0 })
			continue
		}
		m := pattern(rng.IntN(maxLen+1), len(want))
		if err := a.Send(n.now, m, token.MinSizeForLength(maxLen), len(m), 0, 2, 2, nil, len(want)); err != nil {
			t.Fatal(err)
		}
		want = append(want, m)
	}
	n.run(60*time.Second, func() bool {
		r.poll()
		drainCompletions(a, &comps)
		return len(comps) == count
	})
	n.run(time.Second, func() bool { r.poll(); return len(r.got) >= count })
	if len(r.got) != count {
		t.Fatalf("got %d messages, want %d", len(r.got), count)
	}
	for i := range want {
		if !bytes.Equal(r.got[i].data, want[i]) {
			t.Fatalf("message %d differs (len %d vs %d)", i, len(r.got[i].data), len(want[i]))
		}
		if r.got[i].ev.Type != EventPeerRecv && r.got[i].ev.Type != EventFastPeerRecv {
			t.Fatalf("type %d, want a PEER event", r.got[i].ev.Type)
		}
	}
	for i, c := range comps {
		if c.st != StatusSuccess || c.id != i {
			t.Fatalf("completion %d: %+v", i, c)
		}
	}
	t.Logf("stats A %+v", a.Stats())
	t.Logf("stats B %+v", b.Stats())
}

func TestLossDupReorder(t *testing.T) {
	for _, tc := range []struct {
		name               string
		drop, dup, reorder float64
	}{
		{"clean", 0, 0, 0},
		{"drop10", 0.10, 0, 0},
		{"dup10", 0, 0.10, 0},
		{"reorder20", 0, 0, 0.2},
		{"all", 0.05, 0.05, 0.1},
	} {
		for _, ring := range []struct {
			slots int
			next  bool
		}{{0, false}, {8, false}, {8, true}} {
			name := tc.name
			if ring.slots > 0 {
				name += "/ring"
			}
			if ring.next {
				name += "-next"
			}
			t.Run(name, func(t *testing.T) {
				n := newSimnet(t, 42)
				n.slots, n.next = ring.slots, ring.next
				n.drop, n.dup, n.reorder = tc.drop, tc.dup, tc.reorder
				streamTest(t, n, 300, 3000)
				if ring.next && n.nexts == 0 {
					t.Fatal("the engine never used TxCommitNext")
				}
			})
		}
	}
}

func TestTokens(t *testing.T) {
	n := newSimnet(t, 1)
	a := n.add(1, 2, nil)
	if a.SendTokens().Total() != 61 || a.Pools().Tokens().Total() != 253 {
		t.Fatal("default token counts")
	}
	for i := 0; i < 61; i++ {
		if err := a.Send(n.now, nil, 3, 0, 0, 2, 2, nil, i); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := a.Send(n.now, nil, 3, 0, 0, 2, 2, nil, 99); !errors.Is(err, ErrNoSendToken) {
		t.Fatalf("62nd send: %v", err)
	}
	for i := 0; i < 253; i++ {
		if err := a.Provide(make([]byte, 8), 4, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Provide(make([]byte, 8), 4, 0, 0); !errors.Is(err, token.ErrNoReceiveToken) {
		t.Fatalf("254th provide: %v", err)
	}
	if err := a.Send(n.now, make([]byte, 9), 4, 9, 0, 2, 2, nil, 0); !errors.Is(err, ErrLength) && !errors.Is(err, ErrNoSendToken) {
		t.Fatal(err)
	}
}

func TestMisuse(t *testing.T) {
	n := newSimnet(t, 1)
	a := n.add(1, 2, nil)
	for _, tc := range []struct {
		size uint8
		l    int
		pri  uint8
		node uint32
		port uint8
		want error
	}{
		{2, 0, 0, 2, 2, ErrSize},
		{4, 9, 0, 2, 2, ErrLength},
		{4, 1, 2, 2, 2, ErrPriority},
		{4, 1, 0, 2, 16, ErrPort},
		{4, 1, 0, 0, 2, ErrNode},
		{4, 1, 0, 77, 2, ErrNode},
	} {
		if err := a.Send(n.now, make([]byte, 16), tc.size, tc.l, tc.pri, tc.node, tc.port, nil, 0); !errors.Is(err, tc.want) {
			t.Errorf("%+v: got %v", tc, err)
		}
	}
	if a.SendTokens().Free() != 61 {
		t.Fatal("misuse leaked a token")
	}
}

// errorSetup returns a sender a (node 1 port 2) and receiver b (node 2 port 2).
func errorSetup(t *testing.T) (*simnet, *Engine, *Engine, *[]completion) {
	n := newSimnet(t, 3)
	a := n.add(1, 2, nil)
	b := n.add(2, 2, nil)
	return n, a, b, new([]completion)
}

func TestNoBufferThenProvided(t *testing.T) {
	n, a, b, comps := errorSetup(t)
	r := &receiver{e: b}
	msg := pattern(1000, 1)
	if err := a.Send(n.now, msg, 10, len(msg), 1, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	n.run(50*time.Millisecond, func() bool { return a.Stats().NacksReceived >= 3 })
	sentBefore := n.sent
	n.run(50*time.Millisecond, func() bool { return false || n.now > 0 && n.sent > sentBefore+2 })
	_ = b.Provide(make([]byte, 1016), 10, 1, 7)
	n.run(time.Second, func() bool { r.poll(); drainCompletions(a, comps); return len(*comps) == 1 && len(r.got) == 1 })
	if (*comps)[0].st != StatusSuccess || !bytes.Equal(r.got[0].data, msg) || r.got[0].ev.Type != EventHighPeerRecv || r.got[0].ev.Tag != 7 {
		t.Fatalf("%+v %+v", *comps, r.got[0].ev)
	}
	// The backoff must keep the nack rate low (no retransmit storm).
	if st := b.Stats(); st.NacksSent > 40 {
		t.Fatalf("too many nacks: %d", st.NacksSent)
	}
	// Every nack of this run was NO_BUFFER, counted by reason on both
	// sides.
	sb, sa := b.Stats(), a.Stats()
	if sb.NacksSentNoBuffer != sb.NacksSent || sb.NacksSent == 0 || sb.NacksSentRejected+sb.NacksSentPortClosed+sb.NacksSentStaleSession != 0 {
		t.Fatalf("nacks sent by reason: %+v", sb)
	}
	if sa.NacksReceivedNoBuffer != sa.NacksReceived || sa.NacksReceived == 0 {
		t.Fatalf("nacks received by reason: %+v", sa)
	}
}

func TestTimedOutResumeAndDrop(t *testing.T) {
	n, a, b, comps := errorSetup(t)
	r := &receiver{e: b, keep: true}
	m := [][]byte{pattern(10, 1), pattern(10, 2), pattern(10, 3)}
	for i, x := range m {
		if err := a.Send(n.now, x, 5, len(x), 0, 2, 2, nil, i); err != nil {
			t.Fatal(err)
		}
	}
	start := n.now
	n.run(time.Second, func() bool { drainCompletions(a, comps); return len(*comps) == 1 })
	if c := (*comps)[0]; c.id != 0 || c.st != StatusSendTimedOut {
		t.Fatalf("%+v", c)
	}
	if el := n.now - start; el < 200*time.Millisecond || el > 400*time.Millisecond {
		t.Fatalf("timed out after %v, progress timeout 200ms", el)
	}
	// The stream is disabled: with a buffer provided, nothing moves.
	_ = b.Provide(make([]byte, 24), 5, 0, 0)
	_ = b.Provide(make([]byte, 24), 5, 0, 0)
	for i := 0; i < 1000 && n.step(); i++ {
	}
	r.poll()
	if len(r.got) != 0 {
		t.Fatalf("disabled stream delivered %d messages", len(r.got))
	}
	if err := a.Resume(n.now, 0, 2, 2, nil, 100); err != nil {
		t.Fatal(err)
	}
	n.run(time.Second, func() bool { r.poll(); drainCompletions(a, comps); return len(*comps) == 4 })
	got := *comps
	if got[1].id != 100 || got[1].st != StatusSuccess || got[2].id != 1 || got[3].id != 2 {
		t.Fatalf("%+v", got)
	}
	if len(r.got) != 2 || !bytes.Equal(r.got[0].data, m[1]) || !bytes.Equal(r.got[1].data, m[2]) {
		t.Fatalf("resume delivered %d", len(r.got))
	}
	// Now a timeout followed by DropSends.
	*comps = nil
	for i, x := range m {
		if err := a.Send(n.now, x, 5, len(x), 0, 2, 2, nil, 10+i); err != nil {
			t.Fatal(err)
		}
	}
	n.run(time.Second, func() bool { drainCompletions(a, comps); return len(*comps) == 1 })
	if err := a.Drop(n.now, 0, 2, 2, nil, 200); err != nil {
		t.Fatal(err)
	}
	drainCompletions(a, comps)
	want := []completion{{10, StatusSendTimedOut}, {11, StatusSendDropped}, {12, StatusSendDropped}, {200, StatusSuccess}}
	for i := range want {
		if (*comps)[i] != want[i] {
			t.Fatalf("got %+v want %+v", *comps, want)
		}
	}
	// The stream works again afterwards.
	_ = b.Provide(make([]byte, 24), 5, 0, 0)
	if err := a.Send(n.now, m[0], 5, 10, 0, 2, 2, nil, 300); err != nil {
		t.Fatal(err)
	}
	n.run(time.Second, func() bool { r.poll(); drainCompletions(a, comps); return len(*comps) == 5 })
	if (*comps)[4] != (completion{300, StatusSuccess}) {
		t.Fatalf("%+v", *comps)
	}
	if a.SendTokens().Free() != 61 {
		t.Fatalf("tokens leaked: %d free", a.SendTokens().Free())
	}
}

func TestRejected(t *testing.T) {
	n, a, b, comps := errorSetup(t)
	_ = b.Pools().SetAcceptable(0, 1<<6)
	_ = b.Provide(make([]byte, 24), 5, 0, 0)
	if err := a.Send(n.now, pattern(5, 0), 5, 5, 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(n.now, pattern(5, 0), 5, 5, 0, 2, 2, nil, 2); err != nil {
		t.Fatal(err)
	}
	n.run(time.Second, func() bool { drainCompletions(a, comps); return len(*comps) == 1 })
	if (*comps)[0] != (completion{1, StatusSendRejected}) {
		t.Fatalf("%+v", *comps)
	}
	if err := a.Drop(n.now, 0, 2, 2, nil, 3); err != nil {
		t.Fatal(err)
	}
	drainCompletions(a, comps)
	if (*comps)[1] != (completion{2, StatusSendDropped}) || (*comps)[2] != (completion{3, StatusSuccess}) {
		t.Fatalf("%+v", *comps)
	}
}

func TestUnreachable(t *testing.T) {
	n, a, _, comps := errorSetup(t)
	n.cut = true
	if err := a.Send(n.now, pattern(5000, 0), 13, 5000, 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	start := n.now
	n.run(2*time.Second, func() bool { drainCompletions(a, comps); return len(*comps) == 1 })
	if (*comps)[0] != (completion{1, StatusTargetNodeUnreached}) {
		t.Fatalf("%+v", *comps)
	}
	if el := n.now - start; el < 300*time.Millisecond || el > 600*time.Millisecond {
		t.Fatalf("unreachable after %v", el)
	}
	if a.Stats().DataRetransmitted > 2000 {
		t.Fatalf("retransmit storm: %d", a.Stats().DataRetransmitted)
	}
}

func TestPortClosed(t *testing.T) {
	n := newSimnet(t, 3)
	a := n.add(1, 2, nil)
	n.add(2, 4, func(c *Config) { c.AnswerClosed = func(p uint8) bool { return p == 5 } })
	var comps []completion
	if err := a.Send(n.now, nil, 3, 0, 0, 2, 5, nil, 1); err != nil {
		t.Fatal(err)
	}
	n.run(time.Second, func() bool { drainCompletions(a, &comps); return len(comps) == 1 })
	if comps[0] != (completion{1, StatusTargetPortClosed}) {
		t.Fatalf("%+v", comps)
	}
}

func TestCloseNacksInFlight(t *testing.T) {
	n, a, b, comps := errorSetup(t)
	r := &receiver{e: b, keep: true}
	_ = b.Provide(make([]byte, 24), 5, 0, 0)
	_ = a.Send(n.now, pattern(3, 0), 5, 3, 0, 2, 2, nil, 1)
	_ = a.Send(n.now, pattern(3, 0), 5, 3, 0, 2, 2, nil, 2)
	n.run(time.Second, func() bool { r.poll(); drainCompletions(a, comps); return len(*comps) == 1 })
	b.Close(n.now)
	n.replace(b, New(Config{NodeID: 99}, simOut{n})) // b is gone
	n.run(time.Second, func() bool { drainCompletions(a, comps); return len(*comps) == 2 })
	if (*comps)[1] != (completion{2, StatusTargetPortClosed}) {
		t.Fatalf("%+v", *comps)
	}
}

// TestPeerRestart restarts the receiver or the sender of a stream with
// messages in flight. A restarted sender's new incarnation sends in a new
// session; every send of it succeeds. A restarted receiver's new
// incarnation receives nothing the old one had: a message of which a frame
// went out in the session the old one followed completes with
// StatusTargetPortClosed (the old one may have delivered it without its
// ack leaving), and the stream is held until Resume, after which the
// messages never transmitted, and new ones, reach the new incarnation.
func TestPeerRestart(t *testing.T) {
	for _, who := range []string{"receiver", "sender"} {
		t.Run(who, func(t *testing.T) {
			n := newSimnet(t, 11)
			n.drop = 0.02
			a := n.add(1, 2, func(c *Config) { c.Window = 32 })
			b := n.add(2, 2, nil)
			r := &receiver{e: b}
			provide := func(e *Engine) {
				for i := 0; i < 20; i++ {
					_ = e.Provide(make([]byte, 2000), 11, 0, 0)
				}
			}
			provide(b)
			var comps []completion
			resumed := 0
			// drain collects a's completions and resumes its stream after
			// each failure.
			drain := func() {
				drainCompletions(a, &comps)
				for _, c := range comps[resumed:] {
					if c.st != StatusSuccess {
						if err := a.Resume(n.now, 0, 2, 2, nil, -1); err != nil {
							t.Fatal(err)
						}
					}
				}
				resumed = len(comps)
			}
			send := func(from, to int) {
				for i := from; i < to; i++ {
					for a.SendTokens().Free() == 0 {
						n.run(10*time.Second, func() bool { r.poll(); drain(); return a.SendTokens().Free() > 0 })
					}
					m := pattern(1500, i)
					if err := a.Send(n.now, m, 11, len(m), 0, 2, 2, nil, i); err != nil {
						t.Fatal(err)
					}
				}
			}
			send(0, 30)
			n.run(10*time.Second, func() bool { r.poll(); drain(); return len(r.got) >= 10 })
			old := r
			from, total := 30, 50
			if who == "receiver" {
				b2 := n.add(2, 2, nil)
				n.engines = n.engines[:2]
				n.replace(b, b2)
				b = b2
				r = &receiver{e: b}
				provide(b)
			} else {
				a2 := n.add(1, 2, nil)
				n.engines = n.engines[:2]
				n.replace(a, a2)
				a = a2
				comps, resumed = nil, 0
				total = 20
			}
			send(from, from+20)
			st := map[int]Status{}
			n.run(30*time.Second, func() bool {
				r.poll()
				drain()
				for _, c := range comps {
					if c.id >= 0 {
						st[c.id] = c.st
					}
				}
				return len(st) == total
			})
			r.poll() // every message acknowledged is in its event queue
			id := func(d []byte) int {
				for i := 0; i < 50; i++ {
					if bytes.Equal(d, pattern(1500, i)) {
						return i
					}
				}
				t.Fatalf("delivered a message that was not sent (length %d)", len(d))
				return -1
			}
			inOld := map[int]bool{}
			if who == "receiver" {
				for _, g := range old.got {
					inOld[id(g.data)] = true
				}
			}
			last, failed := -1, 0
			for _, g := range r.got {
				k := id(g.data)
				if k <= last || inOld[k] {
					t.Fatalf("message %d delivered after message %d, or to both incarnations", k, last)
				}
				last = k
				// (The old sender's messages have no completion.)
				if s, ok := st[k]; (!ok && who == "receiver") || (ok && s != StatusSuccess) {
					t.Fatalf("message %d delivered but completed with %d", k, s)
				}
			}
			for k, s := range st {
				switch {
				case s == StatusSuccess:
				case who == "receiver" && k < 30 && s == StatusTargetPortClosed:
					failed++
				default:
					t.Fatalf("message %d completed with %d", k, s)
				}
			}
			if last != from+19 {
				t.Fatalf("the new incarnation's last message is %d, want %d", last, from+19)
			}
			t.Logf("%d messages failed at the restart", failed)
		})
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	n := newSimnet(t, 1)
	a := n.add(1, 2, nil)
	b := n.add(2, 2, nil)
	buf := make([]byte, 4096)
	msg := pattern(3000, 1)
	for i := 0; i < 4; i++ {
		_ = b.Provide(buf, 12, 0, 0)
	}
	var ev Event
	round := func() {
		if err := a.Send(n.now, msg, 12, len(msg), 0, 2, 2, nil, nil); err != nil {
			panic(err)
		}
		for {
			if !n.step() {
				break
			}
			for b.PopEvent(&ev) {
				if ev.Type != EventSentTokens {
					_ = b.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag)
				}
			}
			for a.PopEvent(&ev) {
			}
			if _, _, _, ok := a.PopCompletion(); ok {
				break
			}
		}
	}
	for i := 0; i < 10; i++ {
		round()
	}
	// The simulated network copies frames (allocates); count only the
	// engines' share by subtracting a run of the network alone.
	sent := n.sent
	allocs := testing.AllocsPerRun(50, round)
	frames := float64(n.sent-sent) / 51
	if allocs > frames+0.5 {
		t.Fatalf("%v allocs per round for %v frames", allocs, frames)
	}
}
