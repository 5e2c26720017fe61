package proto

import (
	"bytes"
	"testing"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// queuedGot reports whether s holds a reply (GOT) and whether a frame of
// the first one went out in s's session.
func queuedGot(e *Engine, s *txStream) (queued, sent bool) {
	for k := 0; k < s.qLen; k++ {
		r := &e.recs[s.q[(s.qHead+k)%qCap]]
		if r.kind == recGot {
			return true, k < s.qAssigned && diff(r.firstSeq, s.hiSent) < 0
		}
	}
	return false, false
}

// TestGotNotToSuccessor: a reply (GOT) that the target queued for a
// requester and had not sent when the requester died never reaches the
// requester's next incarnation, even when that one's own get to the same
// target has the same id and length (get ids are random 24-bit numbers:
// one chance in 2^24). The target learns of the new incarnation in the
// handshake (orphan) and drops the reply; the new incarnation's get ends
// with its own data or fails, never with the old one's.
func TestGotNotToSuccessor(t *testing.T) {
	n := newSimnet(t, 5)
	a, b, mem, ptr := rdmaPair(t, n, 1000, true)
	var ca, cb []completion
	// A first get starts b's stream back to a.
	if err := a.Get(n.now, ptr, make([]byte, 100), 100, 0, 2, 4, nil, 0); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &ca, 1, time.Second)
	// The replies of b's reply stream are lost from now on: the next one
	// stays queued at b, sent but never acknowledged.
	s := b.tx(b.peer(1), 2, replyPri)
	n.lose = func(f []byte) bool {
		h := wire.FrameHeader(f)
		return h.Type() == wire.TypeGot && h.Flags()&wire.FlagReply != 0
	}
	// a asks for bytes 200..299; b queues the reply.
	if err := a.Get(n.now, ptr+200, make([]byte, 100), 100, 0, 2, 4, nil, 1); err != nil {
		t.Fatal(err)
	}
	var id uint32
	for _, op := range a.rdma.gets {
		id = op.id
	}
	n.run(time.Second, func() bool { _, sent := queuedGot(b, s); return sent })
	n.lose = nil

	// a dies; a2 opens the port and asks b for bytes 400..499 with a get
	// of the same id and length.
	a2 := New(a.cfg, simOut{n})
	n.replace(a, a2)
	a2.rd().nextGet = id
	buf := make([]byte, 100)
	if err := a2.Get(n.now, ptr+400, buf, 100, 0, 2, 4, nil, 2); err != nil {
		t.Fatal(err)
	}
	if a2.rdma.gets[id] == nil {
		t.Fatalf("a2's get does not have the old get's id %d", id)
	}
	// b's retransmission meets a2, which does not follow b's session;
	// b's new session's handshake tells it a2 is a new incarnation: the
	// replies queued on the stream are dropped, with no completion at b.
	var ca2 []completion
	waitComps(t, n, a2, &ca2, 1, 5*time.Second)
	switch {
	case bytes.Equal(buf, mem[200:300]):
		t.Fatalf("a2's get (%v) holds the data of the get of the incarnation before", ca2[0].st)
	case ca2[0].st == StatusSuccess && !bytes.Equal(buf, mem[400:500]):
		t.Fatal("a2's get succeeded with data that is not bytes 400..499")
	}
	if q, _ := queuedGot(b, s); q {
		t.Error("b still holds a reply queued for a after meeting a2")
	}
	if drainCompletions(b, &cb); len(cb) != 0 {
		t.Errorf("b's completions %+v: replies complete nothing at their sender", cb)
	}
	t.Logf("a2's get: %v", ca2[0].st)
}
