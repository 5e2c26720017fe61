package proto

import (
	"bytes"
	"testing"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// captureOut is a wireOut that keeps a copy of every frame.
type captureOut struct {
	wireOut
	frames [][]byte
}

func (o *captureOut) Send(f []byte) error {
	o.frames = append(o.frames, bytes.Clone(f))
	return o.wireOut.Send(f)
}

func (o *captureOut) SendBatch(fs [][]byte) (int, error) {
	for _, f := range fs {
		_ = o.Send(f)
	}
	return len(fs), nil
}

// TestOneFrameTemplate: the frames of one-frame messages, which addOne
// patches from the stream's template, are the frames built from scratch,
// and follow what the template depends on: the peer's MAC (a node map
// change), the stream's session (a new one) and this node's id.
func TestOneFrameTemplate(t *testing.T) {
	var now Time = time.Second
	macs := map[uint32][6]byte{1: mac(1), 2: mac(2)}
	cfg := func(node uint32) Config {
		return Config{
			NodeID: node, Port: 2, MAC: mac(int(node)), SegLen: 1456,
			ProgressTimeout: time.Minute, LivenessTimeout: time.Minute,
			Resolve: func(id uint32) ([6]byte, bool) { m, ok := macs[id]; return m, ok },
		}
	}
	oa, ob := &captureOut{wireOut: wireOut{now: &now}}, &wireOut{now: &now}
	a, b := New(cfg(1), oa), New(cfg(2), ob)
	oa.peer, ob.peer = b, a
	for _, e := range []*Engine{a, b} {
		for i := 0; i < 4; i++ {
			if err := e.Provide(make([]byte, 64), 7, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	recv := func(e *Engine) {
		t.Helper()
		var done int
		if !popRecv(t, e, &done) {
			t.Fatal("no receive event")
		}
	}
	// check: a's last frame is a DATA frame of msg to dst from node, in
	// the current session of a's stream, and equals the frame built from
	// scratch.
	check := func(msg []byte, dst [6]byte, node uint32) {
		t.Helper()
		f := oa.frames[len(oa.frames)-1]
		h, err := wire.ParseFrame(f, a.cfg.EtherType)
		if err != nil {
			t.Fatal(err)
		}
		s := a.peers[2].tx[2][1]
		got := h.Fields()
		if got.Type != wire.TypeData || got.SourceNode != node || got.TargetNode != 2 || got.Session != s.session ||
			got.MsgLen != uint32(len(msg)) || got.Offset != 0 || !bytes.Equal(h.Payload(), msg) {
			t.Fatalf("frame %+v payload %q; want DATA from node %d in session %#x of %q", got, h.Payload(), node, s.session, msg)
		}
		if d := wire.Ethernet(f).Dst(); d != dst {
			t.Fatalf("frame to %x, want %x", d, dst)
		}
		if want := wire.AppendFrame(nil, dst, a.cfg.MAC, a.cfg.EtherType, &got, msg); !bytes.Equal(f, want) {
			t.Fatalf("frame\n %x\nbuilt from scratch\n %x", f, want)
		}
	}
	round := func(msg []byte, dst [6]byte) {
		t.Helper()
		now += time.Microsecond
		if err := a.Send(now, msg, 7, len(msg), 1, 2, 2, nil, nil); err != nil {
			t.Fatal(err)
		}
		check(msg, dst, 1)
		b.Tick(now)
		recv(b)
		if err := b.Send(now, []byte("pong"), 7, 4, 1, 1, 2, nil, nil); err != nil {
			t.Fatal(err)
		}
		a.Tick(now)
		recv(a)
	}
	for _, m := range []string{"a", "bb", "ccc", "ccc", "a longer message"} {
		round([]byte(m), macs[2])
	}
	if s := a.peers[2].tx[2][1]; !s.tmplFor.ok {
		t.Fatal("the frames were not built from the template")
	}

	// The node map gives node 2 another MAC.
	macs[2] = [6]byte{2, 0, 0, 0, 9, 2}
	a.InvalidatePeers()
	for _, m := range []string{"after", "the map", "changed"} {
		round([]byte(m), macs[2])
	}

	// A new session (as after ResumeSending).
	s := a.peers[2].tx[2][1]
	old := s.session
	a.open(now, s)
	for _, m := range []string{"in", "a new", "session"} {
		round([]byte(m), macs[2])
	}
	if s.session == old {
		t.Fatal("no new session")
	}

	// This node's id changes (node 2 refuses the frame: node 3 is unknown).
	a.SetNodeID(3)
	now += time.Microsecond
	if err := a.Send(now, []byte("renumbered"), 7, 10, 1, 2, 2, nil, nil); err != nil {
		t.Fatal(err)
	}
	check([]byte("renumbered"), macs[2], 3)
}
