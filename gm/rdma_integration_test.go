package gm_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/relay"
)

// rdmaSizes are transfer lengths for MTU 1500: a PUT/GOT frame carries
// 1500 - 52 = 1448 bytes, so 1448 fits one frame and 1449 needs two.
var rdmaSizes = []int{0, 1, 1448, 1449, 2*1448 + 17, 100_000, 1 << 20}

// syncWith orders this goroutine after everything p's protocol did so far
// (it takes and releases p's mutex), so that memory p's puts wrote can be
// read without a data race.
func syncWith(p *gm.Port) { _ = p.Stats() }

// rdmaTarget registers n bytes of pattern on p and returns them with
// their remote pointer.
func rdmaTarget(t *testing.T, p *gm.Port, n int, seed uint64) ([]byte, gm.RemotePtr) {
	t.Helper()
	mem := pattern(n, seed)
	ptr, err := p.RegisterMemory(mem)
	if err != nil {
		t.Fatal(err)
	}
	return mem, ptr
}

// TestIntegrationPutGet puts and gets transfers of 0 bytes to 1 MiB and
// checks them byte for byte; a message sent after a put finds its data in
// place; the target sees no event.
func TestIntegrationPutGet(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	const regLen = 3 << 20
	mem, ptr := rdmaTarget(t, pr.b, regLen, 1)
	if err := pr.b.AllowRemoteMemoryAccess(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []string
	var checked []int
	lb := startLoop(pr.b, func(e *gm.Event) {
		// The message after put k: put k's data must be in place.
		k := int(e.Message[0])
		off := int(e.Message[1])<<16 | int(e.Message[2])<<8 | int(e.Message[3])
		ok := bytes.Equal(mem[off:off+rdmaSizes[k]], pattern(rdmaSizes[k], uint64(100+k)))
		mu.Lock()
		if ok {
			checked = append(checked, k)
		} else {
			events = append(events, "message before its put's data")
		}
		mu.Unlock()
		_ = pr.b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	defer lb.Stop()
	for i := 0; i < 16; i++ {
		_ = pr.b.ProvideReceiveBuffer(make([]byte, 8), 4, gm.LowPriority, 0)
	}
	la := startLoop(pr.a, nil)
	defer la.Stop()

	// Puts, each followed by a message naming it.
	c := newCompletions()
	want := bytes.Clone(mem)
	syncWith(pr.b) // the reads above happen before b's protocol writes mem
	off, id := 0, 0
	for k, l := range rdmaSizes {
		src := pattern(l, uint64(100+k))
		copy(want[off:], src)
		if err := pr.a.Put(src, ptr.Add(off), l, gm.LowPriority, pr.bn, 4, c.cb, id); err != nil {
			t.Fatal(err)
		}
		note := []byte{byte(k), byte(off >> 16), byte(off >> 8), byte(off)}
		if err := pr.a.SendWithCallback(note, 4, 4, gm.LowPriority, pr.bn, 4, c.cb, id+1); err != nil {
			t.Fatal(err)
		}
		id += 2
		off += l + 1
	}
	for i, x := range c.wait(t, id, 20*time.Second) {
		if x != (completion{i, gm.Success}) {
			t.Fatalf("completion %d: %+v", i, x)
		}
	}
	waitFor(t, 5*time.Second, "messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(checked)+len(events) == len(rdmaSizes) })
	syncWith(pr.b)
	if !bytes.Equal(mem, want) {
		t.Fatal("target memory differs from the puts")
	}
	if len(events) > 0 {
		t.Fatal(events)
	}

	// Gets of the same sizes from the region (now holding the puts' data).
	c = newCompletions()
	bufs := make([][]byte, len(rdmaSizes))
	offs := make([]int, len(rdmaSizes))
	off = 7
	for k, l := range rdmaSizes {
		bufs[k] = make([]byte, l+1)
		bufs[k][l] = 0xEE // beyond length: must stay untouched
		offs[k] = off
		if err := pr.a.Get(ptr.Add(off), bufs[k], l, gm.HighPriority, pr.bn, 4, c.cb, k); err != nil {
			t.Fatal(err)
		}
		off += l * 2
	}
	for _, x := range c.wait(t, len(rdmaSizes), 20*time.Second) {
		if x.st != gm.Success {
			t.Fatalf("get %d: %v", x.id, x.st)
		}
	}
	for k, l := range rdmaSizes {
		if !bytes.Equal(bufs[k][:l], want[offs[k]:offs[k]+l]) || bufs[k][l] != 0xEE {
			t.Fatalf("get %d (%d bytes) differs", k, l)
		}
	}
	waitFor(t, 2*time.Second, "tokens back", func() bool { return pr.a.FreeSendTokens() == 61 })
	t.Logf("A %+v; B %+v", pr.a.Stats(), pr.b.Stats())
}

// TestIntegrationRDMANotAllowed: puts and gets to a port that has not
// called AllowRemoteMemoryAccess fail with SendRejected and disable the
// stream; once it allows access the resumed stream works.
func TestIntegrationRDMANotAllowed(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	mem, ptr := rdmaTarget(t, pr.b, 4096, 2)
	orig := bytes.Clone(mem)
	syncWith(pr.b)
	lb := startLoop(pr.b, nil)
	defer lb.Stop()
	la := startLoop(pr.a, nil)
	defer la.Stop()
	c := newCompletions()
	if err := pr.a.Put(pattern(100, 1), ptr, 100, gm.LowPriority, pr.bn, 4, c.cb, 1); err != nil {
		t.Fatal(err)
	}
	if err := pr.a.Put(pattern(100, 2), ptr, 100, gm.LowPriority, pr.bn, 4, c.cb, 2); err != nil {
		t.Fatal(err)
	}
	expect(t, c.wait(t, 1, 5*time.Second), completion{1, gm.SendRejected})
	if err := pr.a.DropSends(gm.LowPriority, pr.bn, 4, c.cb, 100); err != nil {
		t.Fatal(err)
	}
	expect(t, c.wait(t, 3, 5*time.Second), completion{1, gm.SendRejected}, completion{2, gm.SendDropped}, completion{100, gm.Success})
	buf := make([]byte, 100)
	if err := pr.a.Get(ptr, buf, 100, gm.LowPriority, pr.bn, 4, c.cb, 3); err != nil {
		t.Fatal(err)
	}
	cs := c.wait(t, 4, 5*time.Second)
	if cs[3] != (completion{3, gm.SendRejected}) {
		t.Fatalf("get: %+v", cs)
	}
	syncWith(pr.b)
	if !bytes.Equal(mem, orig) {
		t.Fatal("memory changed without remote access")
	}
	if err := pr.b.AllowRemoteMemoryAccess(); err != nil {
		t.Fatal(err)
	}
	if err := pr.a.ResumeSending(gm.LowPriority, pr.bn, 4, c.cb, 101); err != nil {
		t.Fatal(err)
	}
	if err := pr.a.Get(ptr.Add(10), buf, 100, gm.LowPriority, pr.bn, 4, c.cb, 4); err != nil {
		t.Fatal(err)
	}
	cs = c.wait(t, 6, 5*time.Second)
	if cs[4] != (completion{101, gm.Success}) || cs[5] != (completion{4, gm.Success}) || !bytes.Equal(buf, orig[10:110]) {
		t.Fatalf("after allowing: %+v", cs)
	}
}

// TestIntegrationRDMABadPointer: a pointer beyond the region, into an
// unknown or deregistered region fails with SendRejected, and the target's
// memory is untouched.
func TestIntegrationRDMABadPointer(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	mem, ptr := rdmaTarget(t, pr.b, 10_000, 3)
	orig := bytes.Clone(mem)
	syncWith(pr.b)
	gone, ptr2 := rdmaTarget(t, pr.b, 100, 4)
	_ = gone
	if err := pr.b.DeregisterMemory(ptr2); err != nil {
		t.Fatal(err)
	}
	if err := pr.b.DeregisterMemory(ptr2); !errors.Is(err, gm.ErrRegion) {
		t.Fatalf("second deregister: %v", err)
	}
	if _, err := pr.b.RegisterMemory(nil); !errors.Is(err, gm.ErrRegionEmpty) {
		t.Fatalf("empty region: %v", err)
	}
	if err := pr.b.AllowRemoteMemoryAccess(); err != nil {
		t.Fatal(err)
	}
	lb := startLoop(pr.b, nil)
	defer lb.Stop()
	la := startLoop(pr.a, nil)
	defer la.Stop()
	c := newCompletions()
	n := 0
	for _, tc := range []struct {
		name string
		ptr  gm.RemotePtr
		len  int
	}{
		{"one past the end", ptr.Add(9_999), 2},
		{"beyond the end", ptr.Add(10_001), 0},
		{"long transfer past the end", ptr.Add(5000), 5001},
		{"unknown region", ptr + 7<<gm.RemotePtrRegionShift, 1},
		{"deregistered region", ptr2, 1},
		{"null", 0, 0},
	} {
		for _, get := range []bool{false, true} {
			n++
			buf := make([]byte, tc.len)
			var err error
			if get {
				err = pr.a.Get(tc.ptr, buf, tc.len, gm.LowPriority, pr.bn, 4, c.cb, n)
			} else {
				err = pr.a.Put(buf, tc.ptr, tc.len, gm.LowPriority, pr.bn, 4, c.cb, n)
			}
			if err != nil {
				t.Fatal(err)
			}
			cs := c.wait(t, 2*n-1, 5*time.Second)
			if cs[2*n-2] != (completion{n, gm.SendRejected}) {
				t.Fatalf("%s (get %v): %+v", tc.name, get, cs[2*n-2])
			}
			if err := pr.a.ResumeSending(gm.LowPriority, pr.bn, 4, c.cb, -n); err != nil {
				t.Fatal(err)
			}
			c.wait(t, 2*n, 5*time.Second)
		}
	}
	// The edges themselves are fine.
	c = newCompletions()
	if err := pr.a.Put([]byte{1}, ptr.Add(9_999), 1, gm.LowPriority, pr.bn, 4, c.cb, 1); err != nil {
		t.Fatal(err)
	}
	if err := pr.a.Get(ptr.Add(10_000), nil, 0, gm.LowPriority, pr.bn, 4, c.cb, 2); err != nil {
		t.Fatal(err)
	}
	expect(t, c.wait(t, 2, 5*time.Second), completion{1, gm.Success}, completion{2, gm.Success})
	syncWith(pr.b)
	orig[9_999] = 1
	if !bytes.Equal(mem, orig) {
		t.Fatal("target memory changed by a refused transfer")
	}
}

// TestIntegrationRDMAImpaired runs puts and gets (up to 1 MiB) through the
// impairment relay with loss, duplication and reordering, with the send
// token accounting helpers (each op allocates a token, its callback frees
// it), and checks exactly-once completion and the data.
func TestIntegrationRDMAImpaired(t *testing.T) {
	imp := relay.Impairment{Drop: 0.03, Duplicate: 0.03, Reorder: 0.03, ReorderGap: 3}
	cl := netns.NewImpairedPair(t, relay.Config{Seed: 2, AtoB: imp, BtoA: imp, EtherType: 0x88B5})
	pr := pairOn(t, cl, func(cfg *gm.Config) { cfg.ProgressTimeout = 30 * time.Second; cfg.LivenessTimeout = 30 * time.Second })
	const half = 2 << 20
	mem, ptr := rdmaTarget(t, pr.b, 2*half, 5)
	orig, model := bytes.Clone(mem), bytes.Clone(mem)
	syncWith(pr.b)
	if err := pr.b.AllowRemoteMemoryAccess(); err != nil {
		t.Fatal(err)
	}
	lb := startLoop(pr.b, nil)
	defer lb.Stop()
	la := startLoop(pr.a, nil)
	defer la.Stop()
	if err := pr.a.DepositSendTokens(gm.LowPriority, 16); err != nil {
		t.Fatal(err)
	}
	if err := pr.a.DepositSendTokens(gm.HighPriority, 16); err != nil {
		t.Fatal(err)
	}
	if err := pr.a.DepositSendTokens(gm.HighPriority, pr.a.NumSendTokens()-31); !errors.Is(err, gm.ErrTokenAccounting) {
		t.Fatalf("deposit beyond the port's %d tokens: %v", pr.a.NumSendTokens(), err)
	}
	c := newCompletions()
	type op struct {
		get      bool
		pri      gm.Priority
		off, len int
		buf      []byte
	}
	var ops []op
	var once sync.Map
	var dup []int
	var dupMu sync.Mutex
	cb := func(p *gm.Port, ctx any, st gm.Status) {
		o := ops[ctx.(int)]
		if err := p.FreeSendToken(o.pri); err != nil {
			t.Error(err)
		}
		if _, seen := once.LoadOrStore(ctx.(int), true); seen {
			dupMu.Lock()
			dup = append(dup, ctx.(int))
			dupMu.Unlock()
		}
		c.cb(p, ctx, st)
	}
	// Puts go to the first half in one stream (LOW), so the final contents
	// follow from their order; gets read the second half, never written.
	rng := rand.New(rand.NewPCG(3, 4))
	const count = 80
	ops = make([]op, count)
	for i := range ops {
		l := rng.IntN(20_000)
		switch {
		case i == 10 || i == 11 || i == 50:
			l = 1 << 20
		case i%7 == 0:
			l = 100_000 + rng.IntN(100_000)
		}
		o := op{get: i%2 == 1, off: rng.IntN(half - l), len: l}
		if o.get {
			o.pri = gm.Priority(rng.IntN(2))
			o.off += half
			o.buf = make([]byte, l)
		} else {
			o.buf = pattern(l, uint64(1000+i))
			copy(model[o.off:], o.buf)
		}
		ops[i] = o
	}
	for i, o := range ops {
		deadline := time.Now().Add(30 * time.Second)
		for !pr.a.AllocSendToken(o.pri) {
			if time.Now().After(deadline) {
				t.Fatalf("op %d: no accounted token for 30 s", i)
			}
			time.Sleep(100 * time.Microsecond)
		}
		var err error
		if o.get {
			err = pr.a.Get(ptr.Add(o.off), o.buf, o.len, o.pri, pr.bn, 4, cb, i)
		} else {
			err = pr.a.Put(o.buf, ptr.Add(o.off), o.len, o.pri, pr.bn, 4, cb, i)
		}
		if err != nil {
			t.Fatalf("op %d: %v (the accounting should prevent ErrNoSendToken)", i, err)
		}
	}
	for _, x := range c.wait(t, count, 120*time.Second) {
		if x.st != gm.Success {
			t.Fatalf("op %d (get %v, %d bytes): %v", x.id, ops[x.id].get, ops[x.id].len, x.st)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if len(c.snapshot()) != count || len(dup) > 0 {
		t.Fatalf("%d completions for %d ops, duplicates %v", len(c.snapshot()), count, dup)
	}
	syncWith(pr.b)
	if !bytes.Equal(mem, model) {
		t.Fatal("target memory differs from the puts applied in order")
	}
	for i, o := range ops {
		if o.get && !bytes.Equal(o.buf, orig[o.off:o.off+o.len]) {
			t.Fatalf("get %d (%d bytes) differs", i, o.len)
		}
	}
	if !pr.a.SendTokenAvailable(gm.LowPriority) || !pr.a.SendTokenAvailable(gm.HighPriority) {
		t.Fatal("accounted tokens not back")
	}
	t.Logf("A %+v; B %+v; relay %+v %+v", pr.a.Stats(), pr.b.Stats(), cl.Relay().Stats(relay.AtoB), cl.Relay().Stats(relay.BtoA))
}
