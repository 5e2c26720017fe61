package proto

import (
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/token"
)

// queueOut queues the frames an engine sends in preallocated buffers (no
// allocation in steady state); the benchmark loop hands them to the peer.
type queueOut struct {
	bufs   [][]byte
	n      int
	kicks  int // Send or SendBatch calls
	frames int
}

func (o *queueOut) Send(f []byte) error {
	o.kicks++
	o.add(f)
	return nil
}

func (o *queueOut) add(f []byte) {
	if o.n == len(o.bufs) {
		o.bufs = append(o.bufs, make([]byte, 0, 9100))
	}
	o.bufs[o.n] = append(o.bufs[o.n][:0], f...)
	o.n++
	o.frames++
}

func (o *queueOut) SendBatch(fs [][]byte) (int, error) {
	o.kicks++
	for _, f := range fs {
		o.add(f)
	}
	return len(fs), nil
}

// slotQueueOut is a queueOut that lends its buffers as transmit-ring
// slots (a SlotOut: the engine builds frames in place, as in a link's
// ring), taking a mutex in each call as link.Link does.
type slotQueueOut struct {
	queueOut
	mu sync.Mutex
}

func (o *slotQueueOut) TxSlot() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.slotLocked()
}

func (o *slotQueueOut) slotLocked() []byte {
	if o.n == len(o.bufs) {
		o.bufs = append(o.bufs, make([]byte, 0, 9100))
	}
	return o.bufs[o.n][:cap(o.bufs[o.n])]
}

func (o *slotQueueOut) TxCommit(n int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bufs[o.n] = o.bufs[o.n][:n]
	o.n++
	o.frames++
	return nil
}

func (o *slotQueueOut) Flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.kicks++
	return nil
}

// slotNextQueueOut is a slotQueueOut that is also a SlotNexter (one
// mutex round trip per frame, as link.Link.TxCommitNext).
type slotNextQueueOut struct {
	slotQueueOut
}

func (o *slotNextQueueOut) TxCommitNext(n int) ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bufs[o.n] = o.bufs[o.n][:n]
	o.n++
	o.frames++
	return o.slotLocked(), nil
}

// deliver gives the queued frames to e in batches of up to batch (as the
// gm package reads a link: Input for each, Pump after a full batch, Tick at
// the end) and empties the queue.
func (o *queueOut) deliver(e *Engine, now Time, batch int) {
	i := 0
	for i < o.n {
		j := min(i+batch, o.n)
		for ; i < j; i++ {
			e.Input(now, o.bufs[i])
		}
		if i < o.n {
			e.Pump(now)
		}
	}
	o.n = 0
	e.Tick(now)
}

// BenchmarkEngineStream1MiB measures the engines' own work (both sides,
// without a link) to stream 1 MiB messages with every send token in use,
// at the segment length of MTU 1500 and 9000, the receiver reading 16
// frames per batch (a receiver that keeps up). ns/op is per message; the
// frames, kicks (Send, SendBatch or Flush calls) and acks per message are
// reported. The sender's frames are built in a buffer and copied by
// SendBatch (as a link copies them into its ring), or, in the "slots"
// variants, built in place in lent slots (SlotOut: TxSlot and TxCommit
// per frame) and in the "slotsnext" variants with one TxCommitNext per
// frame (SlotNexter); each slot call takes a mutex, as the link's do.
// The "-cold" variant is "-slotsnext" sending from 61 message buffers in
// turn, as egm-gmperf does (one per send token, written once before the
// run): 61 MiB, so the sender reads each message from memory rather than
// from its caches, as a streaming application does.
func BenchmarkEngineStream1MiB(b *testing.B) {
	for _, mtu := range []int{1500, 9000} {
		for _, out := range []string{"", "-slots", "-slotsnext", "-cold"} {
			b.Run("mtu"+itoa(mtu)+out, func(b *testing.B) { engineStream(b, mtu, 1<<20, 16, out) })
		}
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

func engineStream(b *testing.B, mtu, msgLen, rxBatch int, out string) {
	var now Time = time.Second
	oa, ob := &queueOut{}, &queueOut{}
	var outA Out = oa
	switch out {
	case "-slots":
		so := &slotQueueOut{}
		oa, outA = &so.queueOut, so
	case "-slotsnext", "-cold":
		so := &slotNextQueueOut{}
		oa, outA = &so.queueOut, so
	}
	cfg := func(node uint32) Config {
		c := Config{
			NodeID: node, Port: 2, MAC: mac(int(node)), SegLen: mtu - 44, Window: 1024,
			ProgressTimeout: time.Minute, LivenessTimeout: time.Minute,
			Resolve: func(id uint32) ([6]byte, bool) { return mac(int(id)), id == 1 || id == 2 },
		}
		if out != "" {
			c.ZeroCopyMin = 1
		}
		return c
	}
	a, bb := New(cfg(1), outA), New(cfg(2), ob)
	size := token.MinSizeForLength(msgLen)
	for i := 0; i < 64; i++ {
		if err := bb.Provide(make([]byte, msgLen), size, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	msgs := [][]byte{make([]byte, msgLen)}
	if out == "-cold" {
		for len(msgs) < 61 {
			m := make([]byte, msgLen)
			for i := range m {
				m[i] = byte(i)
			}
			msgs = append(msgs, m)
		}
	}
	var ev Event
	sent, got := 0, 0
	step := func() {
		now += 10 * time.Microsecond
		oa.deliver(bb, now, rxBatch)
		for bb.PopEvent(&ev) {
			if ev.Type == EventRecv || ev.Type == EventPeerRecv {
				got++
				if err := bb.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag); err != nil {
					b.Fatal(err)
				}
			}
		}
		ob.deliver(a, now, 64)
		for a.PopEvent(&ev) {
		}
		for {
			if _, _, _, ok := a.PopCompletion(); !ok {
				break
			}
		}
	}
	run := func(n int) {
		start := sent
		for sent-start < n {
			if err := a.Send(now, msgs[sent%len(msgs)], size, msgLen, 0, 2, 2, nil, nil); err == nil {
				sent++
				continue
			}
			step()
		}
		for got < sent {
			step()
		}
	}
	run(70)
	oa.kicks, oa.frames, ob.kicks, ob.frames = 0, 0, 0, 0
	b.ReportAllocs()
	b.SetBytes(int64(msgLen))
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	b.ReportMetric(float64(oa.frames)/float64(b.N), "frames/msg")
	b.ReportMetric(float64(oa.kicks)/float64(b.N), "kicks/msg")
	b.ReportMetric(float64(ob.frames)/float64(b.N), "acks/msg")
	if st := a.Stats(); st.DataRetransmitted > 0 {
		b.Fatalf("%d frames resent", st.DataRetransmitted)
	}
}
