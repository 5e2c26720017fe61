package proto

import (
	"container/heap"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/ethergm/ethergm/token"
)

// The incast model: N sending hosts stream to one receiving host through a
// switch whose port toward the receiver is the bottleneck: it sends at
// rate bytes per second from a FIFO queue of limit bytes and drops what
// does not fit (a tail-drop switch queue, or tbf). The senders' own links
// and the reverse path (acks) are fast: a fixed propagation delay, no
// queue. Everything runs in virtual time.
type incastNet struct {
	t       testing.TB
	now     Time
	rate    float64       // bottleneck bytes per second
	limit   int           // bottleneck queue, bytes
	prop    time.Duration // one-way delay of every hop
	queued  int           // bytes in the bottleneck queue (including the frame on the wire)
	busy    Time          // when the bottleneck finishes the frames queued
	ev      incastEvents
	seq     uint64
	engines []*Engine // engines[i] is node i+1
	recv    *Engine
	drops   int
	through int // frames the bottleneck sent
	maxQ    int
	// Impairments of a lossy path (incastOpts): random loss of every
	// frame, both ways, and a random delay of the reverse path that keeps
	// its order (a relay that is descheduled holds everything).
	loss    float64
	jitter  time.Duration
	rng     *rand.Rand
	revLast Time
}

type incastEvent struct {
	at    Time
	seq   uint64
	frame []byte
	to    *Engine
	bneck int // > 0: the frame leaves the bottleneck queue (its length)
}

type incastEvents []incastEvent

func (h incastEvents) Len() int { return len(h) }
func (h incastEvents) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h incastEvents) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *incastEvents) Push(x any)   { *h = append(*h, x.(incastEvent)) }
func (h *incastEvents) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (n *incastNet) push(ev incastEvent) {
	n.seq++
	ev.seq = n.seq
	heap.Push(&n.ev, ev)
}

// incastOut is the link of one engine of the model.
type incastOut struct {
	n    *incastNet
	self *Engine
}

func (o *incastOut) Send(f []byte) error {
	n := o.n
	f = append([]byte(nil), f...)
	dst := n.byMAC([6]byte(f[0:6]))
	if dst == nil || (n.loss > 0 && n.rng.Float64() < n.loss) {
		return nil
	}
	if dst != n.recv {
		// The reverse path: no queue.
		at := n.now + 2*n.prop
		if n.jitter > 0 {
			at = max(at+Time(n.rng.Int63n(int64(n.jitter))), n.revLast)
			n.revLast = at
		}
		n.push(incastEvent{at: at, frame: f, to: dst})
		return nil
	}
	// Toward the receiver: through the bottleneck queue after one hop.
	arrive := n.now + n.prop
	n.push(incastEvent{at: arrive, frame: f, to: dst, bneck: -1})
	return nil
}

func (o *incastOut) SendBatch(fs [][]byte) (int, error) {
	for _, f := range fs {
		_ = o.Send(f)
	}
	return len(fs), nil
}

func (n *incastNet) byMAC(m [6]byte) *Engine {
	if m == n.recv.cfg.MAC {
		return n.recv
	}
	for _, e := range n.engines {
		if e.cfg.MAC == m {
			return e
		}
	}
	return nil
}

// enqueue puts frame f, arriving now at the bottleneck, in its queue or
// drops it.
func (n *incastNet) enqueue(f []byte) {
	l := len(f) // as tbf counts: the frame without preamble, FCS and gap
	if n.queued+l > n.limit {
		n.drops++
		return
	}
	n.queued += l
	n.maxQ = max(n.maxQ, n.queued)
	start := max(n.busy, n.now)
	n.busy = start + Time(float64(l)/n.rate*float64(time.Second))
	n.push(incastEvent{at: n.busy, frame: f, to: n.recv, bneck: l})
}

// incastResult is what a run of the model measured.
type incastResult struct {
	goodput            []float64 // bytes per second of messages completed, per sender
	sent, resent       uint64    // data frames, all senders
	drops, through     int
	cutsLoss, cutsDely uint64
	random             uint64 // losses taken as random
	windows            []int
	maxQ               int
	allSent, allResent uint64 // the whole run, warm-up included
	allDrops           int
}

func (r incastResult) total() float64 {
	s := 0.0
	for _, g := range r.goodput {
		s += g
	}
	return s
}

func (r incastResult) resendRatio() float64 { return float64(r.resent) / float64(r.sent) }

// jain is Jain's fairness index of xs: 1 when all are equal, 1/len(xs)
// when one takes everything.
func jain(xs []float64) float64 {
	s, s2 := 0.0, 0.0
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(xs)) * s2)
}

func (r incastResult) String() string {
	return fmt.Sprintf("goodput %.3f Gbit/s, resent %d of %d new frames (%.2f %%), bottleneck dropped %d, sent %d, max queue %d KiB, Jain %.3f, window cuts %d on loss %d on delay, %d losses random, windows %v; whole run with the warm-up: resent %d of %d, dropped %d",
		r.total()*8/1e9, r.resent, r.sent, 100*r.resendRatio(), r.drops, r.through, r.maxQ>>10, jain(r.goodput), r.cutsLoss, r.cutsDely, r.random, r.windows, r.allResent, r.allSent, r.allDrops)
}

// runIncast runs senders hosts, each streaming messages of msgLen bytes
// (inflight of them queued at a time) to one receiver, through a
// bottleneck of rate bits per second and a queue of limit bytes, for d of
// virtual time after a warm-up of warm.
func runIncast(t testing.TB, senders int, rate float64, limit int, warm, d time.Duration, noCC bool) incastResult {
	return runIncastOpts(t, incastOpts{senders: senders, rate: rate, limit: limit, warm: warm, d: d, noCC: noCC})
}

// incastOpts describes a run of runIncastOpts: runIncast's arguments and
// the impairments of a lossy path (incastNet).
type incastOpts struct {
	senders  int
	rate     float64
	limit    int
	warm, d  time.Duration
	noCC     bool
	loss     float64
	jitter   time.Duration
	lossSeed int64
}

func runIncastOpts(t testing.TB, o incastOpts) incastResult {
	const (
		msgLen   = 64 << 10
		inflight = 8
		port     = 2
	)
	senders, warm, d, noCC := o.senders, o.warm, o.d, o.noCC
	n := &incastNet{t: t, now: time.Second, rate: o.rate / 8, limit: o.limit, prop: 5 * time.Microsecond,
		loss: o.loss, jitter: o.jitter, rng: rand.New(rand.NewSource(o.lossSeed))}
	cfg := func(node uint32) Config {
		return Config{
			NodeID: node, Port: port, MAC: mac(int(node)), SegLen: DefaultSegLen,
			NoCongestionControl: noCC,
			Resolve:             func(id uint32) ([6]byte, bool) { return mac(int(id)), id >= 1 && id <= uint32(senders+1) },
		}
	}
	rnode := uint32(senders + 1)
	n.recv = New(cfg(rnode), &incastOut{n: n})
	for i := 0; i < senders; i++ {
		n.engines = append(n.engines, New(cfg(uint32(i+1)), &incastOut{n: n}))
	}
	for _, e := range append([]*Engine{n.recv}, n.engines...) {
		e.out.(*incastOut).self = e
	}
	size := token.MinSizeForLength(msgLen)
	for i := 0; i < 32; i++ {
		if err := n.recv.Provide(make([]byte, msgLen), size, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	msg := pattern(msgLen, 3)
	done := make([]int, senders)
	send := func(i int) {
		if err := n.engines[i].Send(n.now, msg, size, msgLen, 0, rnode, port, nil, i); err != nil {
			t.Fatalf("sender %d: %v", i+1, err)
		}
	}
	for i := range n.engines {
		for k := 0; k < inflight; k++ {
			send(i)
		}
		n.engines[i].Pump(n.now)
	}
	var base []Stats
	var baseDone []int
	var baseDrops, baseThrough int
	start := n.now
	warmEnd, end := start+warm, start+warm+d
	for n.now < end {
		if base == nil && n.now >= warmEnd {
			for _, e := range n.engines {
				base = append(base, e.Stats())
			}
			baseDone = append([]int(nil), done...)
			baseDrops, baseThrough = n.drops, n.through
		}
		// The next event: a frame, or an engine's deadline.
		next := end
		if len(n.ev) > 0 {
			next = min(next, n.ev[0].at)
		}
		for _, e := range append(n.engines, n.recv) {
			if dl := e.NextDeadline(); dl != 0 {
				next = min(next, dl)
			}
		}
		n.now = max(n.now, next)
		for len(n.ev) > 0 && n.ev[0].at <= n.now {
			x := heap.Pop(&n.ev).(incastEvent)
			switch {
			case x.bneck < 0:
				n.enqueue(x.frame)
				continue
			case x.bneck > 0:
				n.queued -= x.bneck
				n.through++
				// The receiver's link: one hop after the bottleneck.
				n.push(incastEvent{at: n.now + n.prop, frame: x.frame, to: x.to})
				continue
			}
			x.to.Input(n.now, x.frame)
		}
		// The receiver's application takes every message and gives the
		// buffer back; the senders queue a new message for every one
		// completed.
		for ev := n.recv.TakeEvent(); ev != nil; ev = n.recv.TakeEvent() {
			if ev.Type != EventSentTokens && ev.Buffer != nil {
				if err := n.recv.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag); err != nil {
					t.Fatal(err)
				}
			}
		}
		n.recv.Tick(n.now)
		for i, e := range n.engines {
			for e.TakeEvent() != nil {
			}
			for {
				_, ctx, st, ok := e.PopCompletion()
				if !ok {
					break
				}
				if st != StatusSuccess {
					t.Fatalf("sender %d: send completed with status %d", ctx.(int)+1, st)
				}
				done[i]++
				send(i)
			}
			e.Tick(n.now)
		}
	}
	var r incastResult
	for i, e := range n.engines {
		st := e.Stats()
		r.sent += st.DataSent - base[i].DataSent
		r.resent += st.DataRetransmitted - base[i].DataRetransmitted
		r.allSent += st.DataSent
		r.allResent += st.DataRetransmitted
		r.cutsLoss += st.WindowCutsLoss
		r.cutsDely += st.WindowCutsDelay
		r.random += st.LossesRandom
		r.goodput = append(r.goodput, float64((done[i]-baseDone[i])*msgLen)/d.Seconds())
		for _, c := range e.Congestion() {
			r.windows = append(r.windows, c.Window)
		}
	}
	r.drops, r.through, r.maxQ, r.allDrops = n.drops-baseDrops, n.through-baseThrough, n.maxQ, n.drops
	return r
}

// TestIncastWindow: N senders stream into one receiver through a 1 Gbit/s
// bottleneck whose queue (tbf's at 2 ms and a 64 KiB burst) drops what
// does not fit. Without congestion control every sender keeps its whole
// window in flight and the queue drops a large share of the frames, which
// are resent; with it, the resent share is small, the bottleneck stays
// busy and the senders share it fairly.
func TestIncastWindow(t *testing.T) {
	const (
		rate  = 1e9
		limit = 1e9/8*0.002 + 64<<10
	)
	for _, senders := range []int{2, 4, 8} {
		t.Run(fmt.Sprint(senders), func(t *testing.T) {
			off := runIncast(t, senders, rate, limit, 50*time.Millisecond, 200*time.Millisecond, true)
			on := runIncast(t, senders, rate, limit, 50*time.Millisecond, 200*time.Millisecond, false)
			t.Logf("without congestion control: %v", off)
			t.Logf("with congestion control:    %v", on)
			if on.resendRatio() > 0.05 {
				t.Errorf("resent %.2f %% of the frames sent, want at most 5 %%", 100*on.resendRatio())
			}
			if on.resendRatio() > off.resendRatio()/2 {
				t.Errorf("resent %.2f %% of the frames sent, without congestion control %.2f %%: want at most half", 100*on.resendRatio(), 100*off.resendRatio())
			}
			if g := on.total() * 8 / rate; g < 0.9 {
				t.Errorf("aggregate goodput %.2f of the bottleneck, want at least 0.9", g)
			}
			if j := jain(on.goodput); j < 0.95 {
				t.Errorf("Jain's fairness %.3f, want at least 0.95 (goodputs %v)", j, on.goodput)
			}
		})
	}
}

// TestWindowClearFlow: a single flow through a path it does not fill
// (10 Gbit/s, a deep queue) keeps its goodput with congestion control.
func TestWindowClearFlow(t *testing.T) {
	for _, rate := range []float64{1e9, 10e9} {
		off := runIncast(t, 1, rate, 4<<20, 20*time.Millisecond, 100*time.Millisecond, true)
		on := runIncast(t, 1, rate, 4<<20, 20*time.Millisecond, 100*time.Millisecond, false)
		t.Logf("%.0f Gbit/s without congestion control: %v", rate/1e9, off)
		t.Logf("%.0f Gbit/s with congestion control:    %v", rate/1e9, on)
		if on.total() < 0.98*off.total() {
			t.Errorf("%.0f Gbit/s: goodput %.3f Gbit/s, without congestion control %.3f", rate/1e9, on.total()*8/1e9, off.total()*8/1e9)
		}
		if on.resent != 0 {
			t.Errorf("%.0f Gbit/s: %d frames resent", rate/1e9, on.resent)
		}
	}
}

// TestRandomLossWindow: a flow through a path that drops frames at random
// (5 %, both ways: data and acks) and delays its acks by up to 2 ms (a
// relay that is descheduled), with a queue it never fills, keeps its window
// whole: random losses are isolated and do not shrink it, and the delay
// (which counts only on a path that lost frames to a queue) does not
// either. Its goodput is that of the flow without congestion control.
func TestRandomLossWindow(t *testing.T) {
	for _, seed := range []int64{1, 2} {
		o := incastOpts{senders: 1, rate: 1e9, limit: 4 << 20, warm: 20 * time.Millisecond, d: 200 * time.Millisecond,
			loss: 0.05, jitter: 2 * time.Millisecond, lossSeed: seed}
		o.noCC = true
		off := runIncastOpts(t, o)
		o.noCC = false
		on := runIncastOpts(t, o)
		t.Logf("seed %d without congestion control: %v", seed, off)
		t.Logf("seed %d with congestion control:    %v", seed, on)
		if on.cutsLoss != 0 || on.cutsDely != 0 {
			t.Errorf("seed %d: the window was cut %d times on loss and %d on delay, want never", seed, on.cutsLoss, on.cutsDely)
		}
		if on.random == 0 {
			t.Errorf("seed %d: no loss taken as random", seed)
		}
		if on.total() < 0.9*off.total() {
			t.Errorf("seed %d: goodput %.3f Gbit/s, without congestion control %.3f", seed, on.total()*8/1e9, off.total()*8/1e9)
		}
	}
}

// TestIncastRandomLoss: the incast of TestIncastWindow on a path that also
// drops 1 % of the frames at random: the queue's losses are still told
// from the random ones and cut the windows, so that the frames resent stay
// near the random loss's share.
func TestIncastRandomLoss(t *testing.T) {
	const (
		rate  = 1e9
		limit = 1e9/8*0.002 + 64<<10
	)
	for _, senders := range []int{4, 8} {
		t.Run(fmt.Sprint(senders), func(t *testing.T) {
			o := incastOpts{senders: senders, rate: rate, limit: limit, warm: 50 * time.Millisecond, d: 200 * time.Millisecond, loss: 0.01, lossSeed: 1}
			on := runIncastOpts(t, o)
			t.Logf("with congestion control: %v", on)
			if on.cutsLoss == 0 {
				t.Errorf("no window cut on loss")
			}
			if on.drops > on.through/100 {
				t.Errorf("the bottleneck dropped %d of %d frames, want at most 1 %%", on.drops, on.through)
			}
			if g := on.total() * 8 / rate; g < 0.9 {
				t.Errorf("aggregate goodput %.2f of the bottleneck, want at least 0.9", g)
			}
			if j := jain(on.goodput); j < 0.95 {
				t.Errorf("Jain's fairness %.3f, want at least 0.95 (goodputs %v)", j, on.goodput)
			}
		})
	}
}
