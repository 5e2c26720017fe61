package proto

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// rdmaPair returns a (node 1, port 2) and b (node 2, port 4) on n; b has a
// registered region of regLen bytes (filled with a pattern) and allows
// remote access if allow.
func rdmaPair(t *testing.T, n *simnet, regLen int, allow bool) (a, b *Engine, mem []byte, ptr uint64) {
	t.Helper()
	a = n.add(1, 2, nil)
	b = n.add(2, 4, nil)
	mem = pattern(regLen, 99)
	var err error
	if ptr, err = b.RegisterMemory(mem); err != nil {
		t.Fatal(err)
	}
	if allow {
		b.AllowRemoteAccess()
	}
	return a, b, mem, ptr
}

// waitComps runs n until e has produced want completions in total.
func waitComps(t *testing.T, n *simnet, e *Engine, comps *[]completion, want int, limit time.Duration) {
	t.Helper()
	n.run(limit, func() bool { drainCompletions(e, comps); return len(*comps) >= want })
}

// SegLen is 100 in simnet, so transfers are cut into 92-byte frames.
var rdmaSizes = []int{0, 1, 91, 92, 93, 184, 185, 1000, 100_000}

func TestPutSizes(t *testing.T) {
	n := newSimnet(t, 1)
	a, b, mem, ptr := rdmaPair(t, n, 200_000, true)
	var comps []completion
	want := bytes.Clone(mem)
	off := 0
	for i, l := range rdmaSizes {
		src := pattern(l, i+1)
		if err := a.Put(n.now, src, ptr+uint64(off), l, uint8(i%2), 2, 4, nil, i); err != nil {
			t.Fatal(err)
		}
		copy(want[off:], src)
		off += l + 3
	}
	waitComps(t, n, a, &comps, len(rdmaSizes), 10*time.Second)
	for i, c := range comps {
		if c.st != StatusSuccess {
			t.Fatalf("put %d: %+v", i, c)
		}
	}
	if !bytes.Equal(mem, want) {
		t.Fatal("target memory differs from the puts")
	}
	if b.Pending() != 0 {
		t.Fatalf("a put raised %d events at the target", b.Pending())
	}
	if a.SendTokens().Free() != 61 || b.SendTokens().Free() != 61 {
		t.Fatal("send tokens leaked")
	}
}

func TestGetSizes(t *testing.T) {
	n := newSimnet(t, 2)
	a, b, mem, ptr := rdmaPair(t, n, 200_000, true)
	var comps []completion
	bufs := make([][]byte, len(rdmaSizes))
	off := 0
	offs := make([]int, len(rdmaSizes))
	for i, l := range rdmaSizes {
		bufs[i] = make([]byte, l+5) // longer than the transfer: only l bytes are written
		offs[i] = off
		if err := a.Get(n.now, ptr+uint64(off), bufs[i], l, uint8(i%2), 2, 4, nil, i); err != nil {
			t.Fatal(err)
		}
		off += 2*l + 1
	}
	waitComps(t, n, a, &comps, len(rdmaSizes), 10*time.Second)
	for i, c := range comps {
		if c.st != StatusSuccess {
			t.Fatalf("get %d: %+v", i, c)
		}
	}
	for i, l := range rdmaSizes {
		if !bytes.Equal(bufs[i][:l], mem[offs[i]:offs[i]+l]) || !bytes.Equal(bufs[i][l:], make([]byte, 5)) {
			t.Fatalf("get %d (len %d) differs", i, l)
		}
	}
	if a.PendingGets() != 0 || b.Pending() != 0 || a.SendTokens().Free() != 61 || b.SendTokens().Free() != 61 {
		t.Fatalf("pending gets %d, target events %d, tokens %d %d", a.PendingGets(), b.Pending(), a.SendTokens().Free(), b.SendTokens().Free())
	}
	// Every reply record is free again once the last GOT is acknowledged.
	n.run(time.Second, func() bool { return freeReplies(b) == ReplySlots })
}

func freeReplies(e *Engine) int {
	cnt := 0
	for i := e.rdma.gotFree; i >= 0; i = e.recs[i].next {
		cnt++
	}
	return cnt
}

func TestRDMANotAllowed(t *testing.T) {
	n := newSimnet(t, 3)
	a, b, mem, ptr := rdmaPair(t, n, 1000, false)
	orig := bytes.Clone(mem)
	var comps []completion
	if err := a.Put(n.now, pattern(10, 1), ptr, 10, 0, 2, 4, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(n.now, pattern(10, 2), ptr, 10, 0, 2, 4, nil, 2); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 1, time.Second)
	if comps[0] != (completion{1, StatusSendRejected}) {
		t.Fatalf("%+v", comps)
	}
	// The stream is disabled: the second put is held. Drop it.
	if err := a.Drop(n.now, 0, 2, 4, nil, 3); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 3, time.Second)
	if comps[1] != (completion{2, StatusSendDropped}) || comps[2] != (completion{3, StatusSuccess}) {
		t.Fatalf("%+v", comps)
	}
	buf := make([]byte, 10)
	if err := a.Get(n.now, ptr, buf, 10, 1, 2, 4, nil, 4); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 4, time.Second)
	if comps[3] != (completion{4, StatusSendRejected}) || a.PendingGets() != 0 {
		t.Fatalf("%+v, pending gets %d", comps, a.PendingGets())
	}
	if !bytes.Equal(mem, orig) {
		t.Fatal("memory written without remote access")
	}
	// Allowed now: after ResumeSending the stream works.
	b.AllowRemoteAccess()
	if err := a.Resume(n.now, 1, 2, 4, nil, 5); err != nil {
		t.Fatal(err)
	}
	if err := a.Get(n.now, ptr+5, buf, 10, 1, 2, 4, nil, 6); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 6, time.Second)
	if comps[5] != (completion{6, StatusSuccess}) || !bytes.Equal(buf, mem[5:15]) {
		t.Fatalf("%+v", comps)
	}
}

func TestRDMABadPointer(t *testing.T) {
	n := newSimnet(t, 4)
	a, b, _, ptr := rdmaPair(t, n, 1000, true)
	other, err := b.RegisterMemory(make([]byte, 10))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.DeregisterMemory(other); err != nil {
		t.Fatal(err)
	}
	if err := b.DeregisterMemory(other); !errors.Is(err, ErrRegion) {
		t.Fatalf("second deregister: %v", err)
	}
	var comps []completion
	id := 0
	for _, tc := range []struct {
		ptr uint64
		len int
		ok  bool
	}{
		{ptr, 1000, true},
		{ptr + 1000, 0, true},
		{ptr + 999, 1, true},
		{ptr + 999, 2, false},
		{ptr + 1001, 0, false},
		{ptr + 1<<RegionShift - 1, 1, false}, // offset wraps to the end of the offset field
		{ptr + 1<<RegionShift, 1, false},     // the next region id: unknown
		{other, 1, false},                    // deregistered
		{0, 0, false},                        // region 0 never exists
	} {
		for _, get := range []bool{false, true} {
			id++
			buf := make([]byte, tc.len)
			if get {
				err = a.Get(n.now, tc.ptr, buf, tc.len, 0, 2, 4, nil, id)
			} else {
				err = a.Put(n.now, buf, tc.ptr, tc.len, 0, 2, 4, nil, id)
			}
			if err != nil {
				t.Fatal(err)
			}
			waitComps(t, n, a, &comps, id, time.Second)
			want := StatusSuccess
			if !tc.ok {
				want = StatusSendRejected
				if err := a.Resume(n.now, 0, 2, 4, nil, -1); err != nil {
					t.Fatal(err)
				}
				waitComps(t, n, a, &comps, id+1, time.Second)
				comps = comps[:len(comps)-1]
			}
			if c := comps[len(comps)-1]; c != (completion{id, want}) {
				t.Fatalf("ptr %#x len %d get %v: %+v, want %v", tc.ptr, tc.len, get, c, want)
			}
		}
	}
}

func TestRDMAMisuse(t *testing.T) {
	n := newSimnet(t, 5)
	a := n.add(1, 2, nil)
	for _, tc := range []struct {
		l         int
		buf       int
		pri, port uint8
		node      uint32
		want      error
	}{
		{5, 4, 0, 2, 2, ErrLength},
		{-1, 4, 0, 2, 2, ErrLength},
		{1, 4, 2, 2, 2, ErrPriority},
		{1, 4, 0, 16, 2, ErrPort},
		{1, 4, 0, 2, 0, ErrNode},
		{1, 4, 0, 2, 77, ErrNode},
	} {
		if err := a.Put(n.now, make([]byte, tc.buf), 1<<RegionShift, tc.l, tc.pri, tc.node, tc.port, nil, 0); !errors.Is(err, tc.want) {
			t.Errorf("put %+v: %v", tc, err)
		}
		if err := a.Get(n.now, 1<<RegionShift, make([]byte, tc.buf), tc.l, tc.pri, tc.node, tc.port, nil, 0); !errors.Is(err, tc.want) {
			t.Errorf("get %+v: %v", tc, err)
		}
	}
	if a.SendTokens().Free() != 61 || a.PendingGets() != 0 {
		t.Fatal("misuse leaked a token or a get")
	}
	if _, err := a.RegisterMemory(nil); !errors.Is(err, ErrRegionEmpty) {
		t.Fatal(err)
	}
	if err := a.DeregisterMemory(12345); !errors.Is(err, ErrRegion) {
		t.Fatal(err)
	}
	p1, _ := a.RegisterMemory(make([]byte, 1))
	p2, _ := a.RegisterMemory(make([]byte, 1))
	if p1 == p2 || p1&(MaxRegionLen-1) != 0 || p1 == 0 || a.Regions() != 2 {
		t.Fatalf("pointers %#x %#x", p1, p2)
	}
	if err := a.DeregisterMemory(p1 + 1); !errors.Is(err, ErrRegion) {
		t.Fatal("deregistered by an inner pointer")
	}
	// Get tokens: each get takes one; the 62nd fails.
	for i := 0; i < 61; i++ {
		if err := a.Get(n.now, 1<<RegionShift, nil, 0, 0, 2, 4, nil, i); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := a.Put(n.now, nil, 1<<RegionShift, 0, 0, 2, 4, nil, 0); !errors.Is(err, ErrNoSendToken) {
		t.Fatal(err)
	}
}

// TestRDMAOrdering checks that puts, gets and sends of one stream take
// effect in order: a message sent after a put finds the put's data in place,
// and a get after a put reads it.
func TestRDMAOrdering(t *testing.T) {
	n := newSimnet(t, 6)
	n.drop, n.reorder = 0.05, 0.1
	a, b, mem, ptr := rdmaPair(t, n, 50_000, true)
	for i := 0; i < 8; i++ {
		_ = b.Provide(make([]byte, 8), 4, 0, 0)
	}
	var comps []completion
	var bad []int
	checked := 0
	poll := func() {
		var ev Event
		for b.PopEvent(&ev) {
			if ev.Type == EventSentTokens {
				continue
			}
			// Message k says: put k is complete in memory.
			k := int(ev.Fast[0])
			if !bytes.Equal(mem[k*5000:(k+1)*5000], pattern(5000, 100+k)) {
				bad = append(bad, k)
			}
			checked++
			_ = b.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag)
		}
	}
	gets := make([][]byte, 8)
	id := 0
	for k := 0; k < 8; k++ {
		for a.SendTokens().Free() < 3 {
			n.run(10*time.Second, func() bool { poll(); drainCompletions(a, &comps); return a.SendTokens().Free() >= 3 })
		}
		if err := a.Put(n.now, pattern(5000, 100+k), ptr+uint64(k*5000), 5000, 0, 2, 4, nil, id); err != nil {
			t.Fatal(err)
		}
		if err := a.Send(n.now, []byte{byte(k)}, 4, 1, 0, 2, 4, nil, id+1); err != nil {
			t.Fatal(err)
		}
		gets[k] = make([]byte, 5000)
		if err := a.Get(n.now, ptr+uint64(k*5000), gets[k], 5000, 0, 2, 4, nil, id+2); err != nil {
			t.Fatal(err)
		}
		id += 3
	}
	n.run(20*time.Second, func() bool { poll(); drainCompletions(a, &comps); return len(comps) == id && checked == 8 })
	if len(bad) > 0 {
		t.Fatalf("messages arrived before their put's data: %v", bad)
	}
	// Puts and sends complete in order; a get completes when its data
	// arrived, which may be after later sends of the stream.
	last := -1
	for _, c := range comps {
		if c.st != StatusSuccess {
			t.Fatalf("completion %+v (all %v)", c, comps)
		}
		if c.id%3 != 2 {
			if c.id < last {
				t.Fatalf("completion %d after %d (all %v)", c.id, last, comps)
			}
			last = c.id
		}
	}
	for k := range gets {
		if !bytes.Equal(gets[k], pattern(5000, 100+k)) {
			t.Fatalf("get %d did not read put %d's data", k, k)
		}
	}
}

// TestRDMAImpaired runs puts, gets and sends in both directions over a
// lossy, duplicating, reordering network and checks exactly-once
// completion and the data. a's puts go to the first half of b's region, in
// one stream, so the final contents follow from their order; its gets read
// the second half, which nothing writes.
func TestRDMAImpaired(t *testing.T) {
	for _, slots := range []int{0, 8} {
		n := newSimnet(t, 7)
		n.slots = slots
		n.drop, n.dup, n.reorder = 0.05, 0.05, 0.1
		a := n.add(1, 2, func(c *Config) { c.Window = 64 })
		b := n.add(2, 4, func(c *Config) { c.Window = 64 })
		const half = 150_000
		memA, memB := make([]byte, 300_000), pattern(2*half, 5)
		orig := bytes.Clone(memB)
		pa, _ := a.RegisterMemory(memA)
		pb, _ := b.RegisterMemory(memB)
		a.AllowRemoteAccess()
		b.AllowRemoteAccess()
		rng := rand.New(rand.NewPCG(1, 2))
		type op struct {
			get      bool
			off, len int
			buf      []byte
		}
		var ops []op
		var compsA, compsB []completion
		wantA := bytes.Clone(memA)
		model := bytes.Clone(memB)
		putsB := 0
		for i := 0; i < 120; i++ {
			for a.SendTokens().Free() == 0 {
				n.run(30*time.Second, func() bool { drainCompletions(a, &compsA); return a.SendTokens().Free() > 0 })
			}
			l := rng.IntN(6000)
			if i%10 == 0 {
				l = 40_000 + rng.IntN(10_000)
			}
			o := op{get: rng.IntN(2) == 0, off: rng.IntN(half - l), len: l}
			if o.get {
				o.off += half
				o.buf = make([]byte, l)
				if err := a.Get(n.now, pb+uint64(o.off), o.buf, l, uint8(rng.IntN(2)), 2, 4, nil, i); err != nil {
					t.Fatal(err)
				}
			} else {
				o.buf = pattern(l, i)
				copy(model[o.off:], o.buf)
				if err := a.Put(n.now, o.buf, pb+uint64(o.off), l, 0, 2, 4, nil, i); err != nil {
					t.Fatal(err)
				}
			}
			ops = append(ops, o)
			// Meanwhile b writes into a's memory (disjoint slices).
			if i < 30 {
				src := pattern(10_000, 1000+i)
				copy(wantA[i*10_000:], src)
				if err := b.Put(n.now, src, pa+uint64(i*10_000), 10_000, 1, 1, 2, nil, i); err != nil {
					t.Fatal(err)
				}
				putsB++
			}
		}
		n.run(120*time.Second, func() bool {
			drainCompletions(a, &compsA)
			drainCompletions(b, &compsB)
			return len(compsA) == len(ops) && len(compsB) == putsB
		})
		seen := map[int]bool{}
		for _, c := range append(compsA, compsB...) {
			if c.st != StatusSuccess {
				t.Fatalf("completion %+v (get %v len %d)\n%s\n%s", c, ops[c.id].get, ops[c.id].len, a.Dump(n.now), b.Dump(n.now))
			}
		}
		for _, c := range compsA {
			if seen[c.id] {
				t.Fatalf("completion %d twice", c.id)
			}
			seen[c.id] = true
		}
		if !bytes.Equal(memB, model) {
			t.Fatal("b's memory differs from the puts applied in order")
		}
		for i, o := range ops {
			if o.get && !bytes.Equal(o.buf, orig[o.off:o.off+o.len]) {
				t.Fatalf("get %d (len %d) differs", i, o.len)
			}
		}
		if !bytes.Equal(memA, wantA) {
			t.Fatal("puts from b differ")
		}
		if a.PendingGets() != 0 || a.SendTokens().Free() != 61 || b.SendTokens().Free() != 61 {
			t.Fatal("leaked gets or tokens")
		}
		t.Logf("slots %d: stats A %+v B %+v", slots, a.Stats(), b.Stats())
	}
}

// TestGetReplySlots issues more gets than the target has reply records:
// the surplus is refused with NackNoBuffer and retried; all complete.
func TestGetReplySlots(t *testing.T) {
	n := newSimnet(t, 8)
	a, b, mem, ptr := rdmaPair(t, n, 61*1000, true)
	var comps []completion
	bufs := make([][]byte, 61)
	for i := range bufs {
		bufs[i] = make([]byte, 1000)
		if err := a.Get(n.now, ptr+uint64(i*1000), bufs[i], 1000, 0, 2, 4, nil, i); err != nil {
			t.Fatal(err)
		}
	}
	waitComps(t, n, a, &comps, 61, 10*time.Second)
	for i, c := range comps {
		if c.st != StatusSuccess || !bytes.Equal(bufs[c.id], mem[c.id*1000:(c.id+1)*1000]) || c.id != i {
			t.Fatalf("get %d: %+v", i, c)
		}
	}
	if a.Stats().NacksReceived == 0 {
		t.Fatal("expected NO_BUFFER refusals beyond the reply records")
	}
	_ = b
}

// TestGetDataStops cuts the network after the target took a GET: the get
// fails with StatusSendTimedOut, the target's GOT stream fails on its own
// and is re-enabled, and both directions work again afterwards.
func TestGetDataStops(t *testing.T) {
	n := newSimnet(t, 9)
	a, b, _, ptr := rdmaPair(t, n, 100_000, true)
	var comps, compsB []completion
	buf := make([]byte, 100_000)
	if err := a.Get(n.now, ptr, buf, 100_000, 0, 2, 4, nil, 1); err != nil {
		t.Fatal(err)
	}
	if len(a.rdma.gets) != 1 {
		t.Fatalf("%d gets pending, want 1", len(a.rdma.gets))
	}
	var id uint32
	for id = range a.rdma.gets {
	}
	n.run(time.Second, func() bool {
		op := a.rdma.gets[id]
		if op == nil {
			t.Fatal("the get completed")
		}
		return op.acked
	})
	n.cut = true
	start := n.now
	waitComps(t, n, a, &comps, 1, 5*time.Second)
	if comps[0] != (completion{1, StatusSendTimedOut}) || a.PendingGets() != 0 {
		t.Fatalf("%+v", comps)
	}
	if el := n.now - start; el < a.stallTimeout() {
		t.Fatalf("get failed after %v", el)
	}
	// b's reply stream fails (nothing answers) and is re-enabled.
	n.run(5*time.Second, func() bool {
		s := b.peers[1].tx[2][replyPri]
		return s.qLen == 0 && !s.disabled
	})
	n.cut = false
	_ = a.Provide(make([]byte, 8), 4, 0, 0)
	if err := b.Send(n.now, []byte("x"), 4, 1, 0, 1, 2, nil, 7); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, b, &compsB, 1, 5*time.Second)
	if compsB[0] != (completion{7, StatusSuccess}) {
		t.Fatalf("b's send after the failed reply: %+v", compsB)
	}
	if err := a.Get(n.now, ptr, buf[:10], 10, 0, 2, 4, nil, 2); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 2, 5*time.Second)
	if comps[1] != (completion{2, StatusSuccess}) {
		t.Fatalf("%+v", comps)
	}
}

// TestRDMATargetRestart restarts the target between gets: the get sent in
// the session the old incarnation followed completes with
// StatusTargetPortClosed (the requester cannot know that the old one did
// not take it), nothing of it reaches the new incarnation, and after
// Resume the requester's stream moves to a new session in which the new
// incarnation serves the next get from its own memory.
func TestRDMATargetRestart(t *testing.T) {
	n := newSimnet(t, 10)
	a, b, _, ptr := rdmaPair(t, n, 1000, true)
	var comps []completion
	buf := make([]byte, 100)
	if err := a.Get(n.now, ptr, buf, 100, 0, 2, 4, nil, 1); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 1, time.Second)
	b2 := n.add(2, 4, nil)
	n.engines = n.engines[:2]
	n.replace(b, b2)
	mem2 := pattern(1000, 7)
	p2, _ := b2.RegisterMemory(mem2)
	b2.AllowRemoteAccess()
	if p2 != ptr {
		t.Fatalf("pointer %#x, want %#x", p2, ptr)
	}
	clear(buf)
	if err := a.Get(n.now, ptr, buf, 100, 0, 2, 4, nil, 2); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 2, 2*time.Second)
	if comps[1] != (completion{2, StatusTargetPortClosed}) || !bytes.Equal(buf, make([]byte, 100)) {
		t.Fatalf("%+v", comps)
	}
	if err := a.Resume(n.now, 0, 2, 4, nil, -1); err != nil {
		t.Fatal(err)
	}
	if err := a.Get(n.now, ptr, buf, 100, 0, 2, 4, nil, 3); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 4, 2*time.Second)
	if comps[3] != (completion{3, StatusSuccess}) || !bytes.Equal(buf, mem2[:100]) {
		t.Fatalf("%+v", comps)
	}
	if st := b2.Stats(); st.SessionsStarted != 1 {
		t.Fatalf("the new incarnation started %d sessions, want 1", st.SessionsStarted)
	}
}

// TestGetsBehindLostGet loses one GET of a stream and sends more GETs than
// the target has reply slots behind it: the later GETs must not take the
// slots the lost one needs when it is resent (they are accepted only after
// it), and all complete.
func TestGetsBehindLostGet(t *testing.T) {
	n := newSimnet(t, 12)
	a, _, mem, ptr := rdmaPair(t, n, 100_000, true)
	var comps []completion
	buf := make([]byte, 100)
	if err := a.Get(n.now, ptr, buf, 100, 0, 2, 4, nil, 0); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 1, time.Second) // the session is established
	bufs := make([][]byte, ReplySlots+10)
	for i := range bufs {
		bufs[i] = make([]byte, 1000)
		if err := a.Get(n.now, ptr+uint64(i*1000), bufs[i], 1000, 0, 2, 4, nil, i+1); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			n.cut = true
			n.step() // lose the first GET
			n.cut = false
		}
	}
	waitComps(t, n, a, &comps, len(bufs)+1, 5*time.Second)
	for _, c := range comps {
		if c.st != StatusSuccess {
			t.Fatalf("%+v", c)
		}
		if c.id > 0 && !bytes.Equal(bufs[c.id-1], mem[(c.id-1)*1000:c.id*1000]) {
			t.Fatalf("get %d differs", c.id)
		}
	}
}

// TestDataFrameInTransfer: a DATA frame whose sequence number falls in a
// PUT transfer being received (with every other field matching, even the
// size byte a transfer's record holds) is malformed: it must neither land
// in a pool buffer nor complete the transfer.
func TestDataFrameInTransfer(t *testing.T) {
	n := newSimnet(t, 9)
	_, b, mem, ptr := rdmaPair(t, n, 1000, true)
	orig := bytes.Clone(mem)
	const sess = 0x1234567
	seq := handshake(t, n, b, 1, 2, 0, sess, 0).Seq()
	src := pattern(150, 5)
	frame := func(typ wire.Type, seq, off, plen uint32, size uint8, raddr uint64) []byte {
		h := wire.HeaderFields{Type: typ, TargetPort: 4, SourcePort: 2, TargetNode: 2, SourceNode: 1,
			Session: sess, Seq: seq, MsgLen: 150, Offset: off, Size: size, RemoteAddr: raddr}
		return wire.AppendFrame(nil, mac(2), mac(1), b.cfg.EtherType, &h, src[off:off+plen])
	}
	b.Input(n.now, frame(wire.TypePut, seq, 0, 92, 0, ptr))
	b.Input(n.now, frame(wire.TypeDataLast, seq+1, 92, 58, 0xFF, 0))
	if st := b.Stats(); st.Malformed != 1 {
		t.Fatalf("malformed %d, want 1", st.Malformed)
	}
	if !bytes.Equal(mem[92:], orig[92:]) || !bytes.Equal(mem[:92], src[:92]) {
		t.Fatal("target memory: the DATA frame landed or the PUT's first frame did not")
	}
	b.Input(n.now, frame(wire.TypePut, seq+1, 92, 58, 0, ptr))
	if !bytes.Equal(mem[:150], src) || !bytes.Equal(mem[150:], orig[150:]) {
		t.Fatal("target memory differs from the put")
	}
	if st := b.Stats(); st.Malformed != 1 || st.DataReceived != 3 {
		t.Fatalf("stats %+v", st)
	}
}
