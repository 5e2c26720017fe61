package proto

import (
	"testing"
	"time"
)

// wiredPair returns engines of nodes 1 and 2 (port 2) whose frames go
// straight to each other's Input at the time *now.
func wiredPair(now *Time) (*Engine, *Engine) {
	oa, ob := &wireOut{now: now}, &wireOut{now: now}
	cfg := func(node uint32) Config {
		return Config{
			NodeID: node, Port: 2, MAC: mac(int(node)), SegLen: 1456,
			ProgressTimeout: time.Minute, LivenessTimeout: time.Minute,
			Resolve: func(id uint32) ([6]byte, bool) { return mac(int(id)), id == 1 || id == 2 },
		}
	}
	a, b := New(cfg(1), oa), New(cfg(2), ob)
	oa.peer, ob.peer = b, a
	return a, b
}

// wireOut hands each frame straight to the peer engine's Input (one frame
// buffer, no allocation): the engines' own cost per message, without a link.
type wireOut struct {
	peer *Engine
	now  *Time
	buf  []byte
}

func (o *wireOut) Send(f []byte) error {
	o.buf = append(o.buf[:0], f...)
	o.peer.Input(*o.now, o.buf)
	return nil
}

func (o *wireOut) SendBatch(fs [][]byte) (int, error) {
	for _, f := range fs {
		_ = o.Send(f)
	}
	return len(fs), nil
}

// BenchmarkEnginePingPong8 measures the engines' work for one round trip of
// an 8-byte message (send, input, event, reply, ack, completion) on both
// sides, as the gm package drives them in polling mode.
func BenchmarkEnginePingPong8(b *testing.B) {
	var now Time = time.Second
	a, bb := wiredPair(&now)
	for _, e := range []*Engine{a, bb} {
		for i := 0; i < 4; i++ {
			if err := e.Provide(make([]byte, 8), 4, 1, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	msg := []byte("pingpong")
	done := 0
	// As the gm package takes events (TakeEvent, no copy), without
	// popRecv's t.Helper, whose stack walk would cost more than the
	// engines' work.
	recv := func(e *Engine) {
		for ev := e.TakeEvent(); ev != nil; ev = e.TakeEvent() {
			if ev.Type == EventSentTokens {
				for {
					if _, _, _, ok := e.PopCompletion(); !ok {
						break
					}
					done++
				}
				continue
			}
			if err := e.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag); err != nil {
				b.Fatal(err)
			}
			return
		}
		b.Fatal("no receive event")
	}
	round := func() {
		now += time.Microsecond
		if err := a.Send(now, msg, 4, 8, 1, 2, 2, nil, nil); err != nil {
			b.Fatal(err)
		}
		bb.Tick(now)
		recv(bb)
		if err := bb.Send(now, msg, 4, 8, 1, 1, 2, nil, nil); err != nil {
			b.Fatal(err)
		}
		a.Tick(now)
		recv(a)
	}
	for i := 0; i < 100; i++ {
		round()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		round()
	}
}
