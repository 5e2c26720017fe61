package proto

import (
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
// frames, kicks (Send or SendBatch calls) and acks per message are
// reported.
func BenchmarkEngineStream1MiB(b *testing.B) {
	for _, mtu := range []int{1500, 9000} {
		b.Run("mtu"+itoa(mtu), func(b *testing.B) { engineStream(b, mtu, 1<<20, 16) })
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

func engineStream(b *testing.B, mtu, msgLen, rxBatch int) {
	var now Time = time.Second
	oa, ob := &queueOut{}, &queueOut{}
	cfg := func(node uint32) Config {
		return Config{
			NodeID: node, Port: 2, MAC: mac(int(node)), SegLen: mtu - 44, Window: 1024,
			ProgressTimeout: time.Minute, LivenessTimeout: time.Minute,
			Resolve: func(id uint32) ([6]byte, bool) { return mac(int(id)), id == 1 || id == 2 },
		}
	}
	a, bb := New(cfg(1), oa), New(cfg(2), ob)
	size := token.MinSizeForLength(msgLen)
	for i := 0; i < 64; i++ {
		if err := bb.Provide(make([]byte, msgLen), size, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	msg := make([]byte, msgLen)
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
			if err := a.Send(now, msg, size, msgLen, 0, 2, 2, nil, nil); err == nil {
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
