package proto

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// The session property test: random interleavings of traffic on both
// priorities of a stream B -> A (messages of one to seven frames), loss,
// duplication and reordering, bursts of lost acks, link cuts long enough to
// fail sends (which the application resumes or drops), restarts of the
// sender (a new incarnation; frames of the old one stay in flight) and of
// the receiver (closed first or killed, with its last acks lost, at once or
// after a while with or without a port answering for its closed port; its
// successor answers the sender's frames with genuine stale-session
// answers, or the resumed sender's handshake), stray
// stale-session answers naming the sender's live session, replays of
// earlier legitimate frames, and frames of a blind forger: a third host
// that knows node ids, ports, MACs and the protocol, including the first
// version's initial sequence number formula, and sends OPEN, OPEN_ACK,
// DATA, DATA_FIRST, PUT, ACK and NACK frames claiming A's or B's id, with
// or without B's MAC. A reference model counts the deliveries of every
// message and receiver incarnation:
//
//   - nothing the forger sent is delivered;
//   - every delivered message was sent, intact, and is delivered at most
//     once to a receiver incarnation;
//   - per receiver incarnation, stream and sender incarnation, messages are
//     delivered in send order, and none is skipped: a message not delivered
//     between two delivered ones failed or was dropped (its sender was
//     told);
//   - once a receiver incarnation delivered a message of a new sender
//     incarnation on a stream, it delivers nothing of an older one;
//   - no message is delivered to two receiver incarnations: one that a
//     killed receiver may have delivered without its sender knowing
//     completes with an error status, never reaching the next incarnation;
//   - every send completed with StatusSuccess was delivered exactly once;
//   - when the network heals, the last incarnation's sends all complete and
//     fresh messages go through.

const propMagic = 0xA5 // first byte of every legitimate message of the test

// propMsg is a message of the test: incarnation, priority, index.
type propMsg struct {
	inc, pri uint8
	idx      uint32
	n        int
}

func (m propMsg) bytes() []byte {
	b := pattern(m.n, int(m.idx)*7+int(m.inc)*131+int(m.pri)*17)
	b[0], b[1], b[2] = propMagic, m.inc, m.pri
	binary.BigEndian.PutUint32(b[3:], m.idx)
	return b
}

// propState is the fate of a message, as its sender learned it.
type propState uint8

const (
	propPending  propState = iota // no completion yet
	propSuccess                   // StatusSuccess
	propFailed                    // an error status (the stream was disabled)
	propDropped                   // StatusSendDropped
	propOrphaned                  // its incarnation restarted first
)

type propWorld struct {
	t       *testing.T
	rng     *rand.Rand
	n       *simnet
	a, b    *Engine
	inc     uint8 // B's incarnation
	nextID  [256][2]uint32
	state   map[propMsg]propState
	sent    [][2][]propMsg  // per incarnation and priority, in send order
	ainc    int             // A's incarnation
	got     map[propMsg]int // deliveries, all receiver incarnations
	gotA    map[propMsg]int // deliveries to the current receiver incarnation
	order   [256][2]int64   // current receiver: per sender incarnation and priority, the last index delivered, -1 none
	newest  [2]int          // current receiver: per priority, the newest sender incarnation delivered
	hist    [][]byte        // legitimate frames seen, for replays
	skipped []propMsg       // skipped by a receiver incarnation, delivered to an earlier one
	ackGap  Time            // acks to B are lost until then
	// failedGot counts the messages that completed with an error status
	// but were delivered (to a receiver killed before its ack left, or
	// before a link cut failed the send).
	failedGot int
	forged    int
}

func newPropWorld(t *testing.T, seed uint64) *propWorld {
	w := &propWorld{t: t, rng: rand.New(rand.NewPCG(seed, 77)), state: map[propMsg]propState{}, got: map[propMsg]int{}, gotA: map[propMsg]int{}}
	n := newSimnet(t, seed)
	n.drop = []float64{0, 0.01, 0.05, 0.1}[w.rng.IntN(4)]
	n.dup = []float64{0, 0.01, 0.05}[w.rng.IntN(3)]
	n.reorder = []float64{0, 0.05, 0.2}[w.rng.IntN(3)]
	n.lose = func(f []byte) bool {
		h, err := wire.ParseFrame(f, wire.EtherType)
		return err == nil && w.n.now < w.ackGap && h.Type() == wire.TypeAck && [6]byte(f[0:6]) == mac(1)
	}
	w.n = n
	w.b = n.add(1, 2, nil)
	w.a = n.add(2, 2, nil)
	w.provideA()
	w.sent = append(w.sent, [2][]propMsg{})
	w.resetOrder()
	return w
}

func (w *propWorld) provideA() {
	for pri := uint8(0); pri < 2; pri++ {
		for i := 0; i < 6; i++ {
			_ = w.a.Provide(make([]byte, 1016), 10, pri, 0)
		}
	}
}

func (w *propWorld) resetOrder() {
	for i := range w.order {
		w.order[i] = [2]int64{-1, -1}
	}
	w.newest = [2]int{}
	clear(w.gotA)
}

// remove takes e off the network (a process killed, not restarted yet).
func (n *simnet) remove(e *Engine) {
	for i, x := range n.engines {
		if x == e {
			n.engines = append(n.engines[:i], n.engines[i+1:]...)
			return
		}
	}
}

// restartA replaces the receiver with a new incarnation, after closing it
// or not (killed). Its undelivered state is lost. Before a kill its acks
// are sometimes lost for a while, so that it dies with messages delivered
// whose sender does not know it; and it sometimes stays dead for a while
// first (long enough or not for the sender's liveness timeout), with or
// without a port of its host answering for the closed port
// (NackPortClosed, as gm_mapper's port does).
func (w *propWorld) restartA() {
	r := w.rng
	w.receiver()
	closed := r.IntN(2) == 0
	if closed {
		w.a.Close(w.n.now)
	} else if r.IntN(2) == 0 {
		w.ackGap = w.n.now + Time(1+r.IntN(40))*Time(time.Millisecond)
		for w.n.now < w.ackGap && w.step() {
		}
		w.receiver()
	}
	var place *Engine // the engine in the network the new incarnation replaces
	if r.IntN(2) == 0 {
		// Dead for a while: nothing answers on port 2 of node 2, or a
		// responder port does (NackPortClosed).
		var resp *Engine
		if r.IntN(2) == 0 {
			cfg := w.a.cfg
			cfg.Port = 0
			cfg.AnswerClosed = func(p uint8) bool { return p == 2 }
			resp = New(cfg, simOut{w.n})
			w.n.replace(w.a, resp)
		} else {
			w.n.remove(w.a)
		}
		end := w.n.now + Time(r.IntN(700))*Time(time.Millisecond)
		for w.n.now < end && w.step() {
		}
		place = resp
	} else {
		place = w.a
	}
	a := New(w.a.cfg, simOut{w.n})
	if place != nil {
		w.n.replace(place, a)
	} else {
		w.n.engines = append(w.n.engines, a)
	}
	w.a = a
	w.ainc++
	w.provideA()
	w.resetOrder()
}

// send queues a new message of the current incarnation on priority pri.
func (w *propWorld) send(pri uint8) {
	if w.b.SendTokens().Free() < 8 {
		return
	}
	m := propMsg{inc: w.inc, pri: pri, idx: w.nextID[w.inc][pri], n: 8 + w.rng.IntN(650)}
	if err := w.b.Send(w.n.now, m.bytes(), 10, m.n, pri, 2, 2, nil, m); err != nil {
		w.t.Fatalf("send: %v", err)
	}
	w.nextID[w.inc][pri]++
	w.state[m] = propPending
	w.sent[w.inc][pri] = append(w.sent[w.inc][pri], m)
}

// sender runs B's application: completions, and a failed stream resumed or
// its sends dropped.
func (w *propWorld) sender() {
	var ev Event
	for w.b.PopEvent(&ev) {
	}
	for {
		_, ctx, st, ok := w.b.PopCompletion()
		if !ok {
			return
		}
		m, isMsg := ctx.(propMsg)
		if !isMsg {
			continue // a Resume or Drop marker
		}
		if w.state[m] != propPending {
			w.t.Fatalf("message %+v completed twice (now %d)", m, st)
		}
		switch st {
		case StatusSuccess:
			w.state[m] = propSuccess
		case StatusSendDropped:
			w.state[m] = propDropped
		default:
			w.state[m] = propFailed
			var err error
			if w.rng.IntN(2) == 0 {
				err = w.b.Resume(w.n.now, m.pri, 2, 2, nil, nil)
			} else {
				err = w.b.Drop(w.n.now, m.pri, 2, 2, nil, nil)
			}
			if err != nil {
				w.t.Fatalf("resume/drop: %v", err)
			}
		}
	}
}

// receiver runs A's application and checks every delivery against the
// model.
func (w *propWorld) receiver() {
	var ev Event
	for w.a.PopEvent(&ev) {
		if ev.Type == EventSentTokens {
			continue
		}
		data := ev.Buffer[:ev.Length]
		if ev.FastLen > 0 || (ev.Type >= EventFastRecv && ev.Type <= EventFastHighPeerRecv) {
			data = ev.Fast[:ev.FastLen]
		}
		data = bytes.Clone(data)
		_ = w.a.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag)
		if len(data) < 7 || data[0] != propMagic || ev.SenderNode != 1 || ev.SenderPort != 2 {
			w.t.Fatalf("delivered a message nobody legitimate sent (forged?): node %d port %d %x", ev.SenderNode, ev.SenderPort, data[:min(len(data), 16)])
		}
		m := propMsg{inc: data[1], pri: data[2], idx: binary.BigEndian.Uint32(data[3:]), n: len(data)}
		if _, ok := w.state[m]; !ok || m.pri != ev.Priority || !bytes.Equal(data, m.bytes()) {
			w.t.Fatalf("delivered a message that was not sent as such: %+v (priority %d)", m, ev.Priority)
		}
		w.got[m]++
		w.gotA[m]++
		if w.gotA[m] > 1 {
			w.t.Fatalf("message %+v delivered %d times to receiver incarnation %d%s", m, w.gotA[m], w.ainc, w.n.dump())
		}
		if w.got[m] > 1 {
			w.t.Fatalf("message %+v delivered to receiver incarnation %d and to an earlier one%s", m, w.ainc, w.n.dump())
		}
		if int(m.inc) < w.newest[m.pri] {
			w.t.Fatalf("message %+v of incarnation %d delivered after one of incarnation %d", m, m.inc, w.newest[m.pri])
		}
		w.newest[m.pri] = int(m.inc)
		last := w.order[m.inc][m.pri]
		if int64(m.idx) <= last {
			w.t.Fatalf("message %+v delivered after message %d of its stream", m, last)
		}
		// No skip: every message between the last delivered and this one
		// failed or was dropped, as its sender was told, or (checked at
		// the end, when its sender knows) an earlier receiver incarnation
		// had it and acknowledged it.
		for i := last + 1; i < int64(m.idx); i++ {
			x := w.sent[m.inc][m.pri][i]
			if st := w.state[x]; st != propFailed && st != propDropped {
				if w.got[x] == 0 {
					w.t.Fatalf("message %+v delivered, but earlier %+v (state %d) was skipped%s", m, x, st, w.n.dump())
				}
				w.skipped = append(w.skipped, x)
			}
		}
		w.order[m.inc][m.pri] = int64(m.idx)
	}
}

// step moves the network one frame or timer on, remembering frames for
// replays.
func (w *propWorld) step() bool {
	if len(w.n.queue) > 0 && w.rng.IntN(4) == 0 {
		if len(w.hist) == 256 {
			w.hist = append(w.hist[:0], w.hist[128:]...)
		}
		w.hist = append(w.hist, w.n.queue[0])
	}
	ok := w.n.step()
	w.sender()
	if w.rng.IntN(8) != 0 { // sometimes A's application is slow to take its messages
		w.receiver()
	}
	return ok
}

// forge sends one frame of the blind forger (or a replay, or a stray stale
// answer).
func (w *propWorld) forge() {
	r := w.rng
	sessions := []uint32{1, 0x5eed5eed, 0x9e3779b1, r.Uint32() | 1}
	sess := sessions[r.IntN(len(sessions))]
	seqs := []uint32{formulaSeq(sess), 0, 1, sess, r.Uint32()}
	seq := seqs[r.IntN(len(seqs))]
	src := mac(0x42)
	if r.IntN(2) == 0 {
		src = mac(1) // B's MAC spoofed
	}
	pri := uint8(r.IntN(2))
	var fl wire.Flags
	if pri != 0 {
		fl = wire.FlagHigh
	}
	payload := bytes.Repeat([]byte{0xEE}, 8+r.IntN(90))
	toA := wire.HeaderFields{TargetPort: 2, SourcePort: 2, TargetNode: 2, SourceNode: 1, Flags: fl, Session: sess, Seq: seq}
	toB := wire.HeaderFields{TargetPort: 2, SourcePort: 2, TargetNode: 1, SourceNode: 2, Flags: fl, Session: sess, Seq: seq}
	var f []byte
	var dst *Engine
	switch r.IntN(10) {
	case 0, 1: // a message claiming B
		toA.Type, toA.Size, toA.MsgLen = wire.TypeData, []uint8{4, 10}[r.IntN(2)], uint32(len(payload))
		if r.IntN(3) == 0 {
			toA.Type, toA.MsgLen = wire.TypeDataFirst, uint32(len(payload))*2
		}
		f, dst = wire.AppendFrame(nil, mac(2), src, wire.EtherType, &toA, payload), w.a
	case 2: // a PUT claiming B
		toA.Type, toA.MsgLen, toA.RemoteAddr = wire.TypePut, uint32(len(payload)), 1<<RegionShift
		f, dst = wire.AppendFrame(nil, mac(2), src, wire.EtherType, &toA, payload), w.a
	case 3, 4: // an OPEN claiming B, leaving nothing or a guessed session
		toA.Type, toA.Seq = wire.TypeOpen, 0
		toA.Ack = []uint32{0, r.Uint32(), formulaSeq(sess)}[r.IntN(3)]
		f, dst = wire.AppendFrame(nil, mac(2), src, wire.EtherType, &toA, nil), w.a
	case 5: // an OPEN_ACK, ACK or NACK claiming A
		toB.Type = []wire.Type{wire.TypeOpenAck, wire.TypeAck, wire.TypeNack}[r.IntN(3)]
		toB.Flags |= wire.FlagAckValid
		toB.Ack = r.Uint32()
		toB.Status = uint8(1 + r.IntN(4))
		if toB.Type != wire.TypeNack {
			toB.Status = 0
		}
		f, dst = wire.AppendFrame(nil, mac(1), mac(2), wire.EtherType, &toB, nil), w.b
	case 6, 7: // a stray copy of an earlier legitimate frame
		if len(w.hist) == 0 {
			return
		}
		f = w.hist[r.IntN(len(w.hist))]
		dst = w.a
		if [6]byte(f[0:6]) == mac(1) {
			dst = w.b
		}
	default: // a stray stale-session answer naming B's live session
		_, s := streamsOf(w.b, 2, 2, pri)
		if s == nil || s.opening || !w.b.outstanding(s) {
			return
		}
		toB.Type, toB.Status, toB.Session, toB.Seq = wire.TypeNack, uint8(wire.NackStaleSession), s.session, s.una+uint32(r.IntN(int(diff(s.nxt, s.una))))
		f, dst = wire.AppendFrame(nil, mac(1), mac(2), wire.EtherType, &toB, nil), w.b
	}
	w.forged++
	dst.Input(w.n.now, f)
	dst.Tick(w.n.now)
}

// restart replaces B with a new incarnation; the old one's messages that
// had not completed are orphaned, its frames stay in flight.
func (w *propWorld) restart() {
	for _, byPri := range w.sent[w.inc] {
		for _, m := range byPri {
			if w.state[m] == propPending {
				w.state[m] = propOrphaned
			}
		}
	}
	w.inc++
	w.sent = append(w.sent, [2][]propMsg{})
	b := New(w.b.cfg, simOut{w.n})
	w.n.replace(w.b, b)
	w.b = b
}

func (w *propWorld) run(ops int) {
	r := w.rng
	for op := 0; op < ops; op++ {
		switch k := r.IntN(100); {
		case k < 30:
			w.send(uint8(r.IntN(2)))
		case k < 75:
			for i := r.IntN(40); i > 0 && w.step(); i-- {
			}
		case k < 87:
			w.forge()
		case k < 91:
			w.ackGap = w.n.now + Time(r.IntN(60))*Time(time.Millisecond)
		case k < 93:
			// A link cut longer than the liveness timeout: sends fail
			// and are resumed or dropped.
			w.n.cut = true
			end := w.n.now + 400*Time(time.Millisecond)
			for w.n.now < end && w.step() {
			}
			w.n.cut = false
		case k < 95:
			if w.inc < 200 {
				w.restart()
			}
		case k < 96:
			w.restartA()
		default:
			end := w.n.now + Time(r.IntN(30))*Time(time.Millisecond)
			for w.n.now < end && w.step() {
			}
		}
	}
}

// heal stops every impairment and checks that the last incarnation's
// sends complete and fresh messages go through, then checks the model.
func (w *propWorld) heal() {
	w.n.drop, w.n.dup, w.n.reorder, w.n.cut, w.ackGap = 0, 0, 0, false, 0
	done := func() bool {
		for _, byPri := range w.sent[w.inc] {
			for _, m := range byPri {
				if w.state[m] == propPending {
					return false
				}
			}
		}
		return true
	}
	settle := func() {
		end := w.n.now + 20*Time(time.Second)
		for !done() {
			if w.n.now > end || !w.step() {
				w.t.Fatalf("the last incarnation's sends do not complete after the network healed%s", w.n.dump())
			}
		}
		for end = w.n.now + Time(time.Second); w.n.now < end && w.step(); {
		}
		w.receiver()
	}
	// What is under way completes (a port closed just before may still
	// fail some of it); then fresh messages go through. A fresh message
	// may still fail once if the receiver was killed last: when its
	// stream's session was confirmed by the killed incarnation, the
	// sender cannot know whether that one took the message (see orphan).
	settle()
	for try := 0; ; try++ {
		for pri := uint8(0); pri < 2; pri++ {
			w.send(pri)
		}
		settle()
		ok := true
		for pri := 0; pri < 2; pri++ {
			byPri := w.sent[w.inc][pri]
			m := byPri[len(byPri)-1]
			if w.state[m] == propSuccess && w.gotA[m] == 1 {
				continue
			}
			if w.state[m] != propFailed || w.ainc == 0 || try > 0 {
				w.t.Fatalf("fresh message %+v: state %d, delivered %d times%s", m, w.state[m], w.got[m], w.n.dump())
			}
			ok = false
		}
		if ok {
			break
		}
	}
	for _, m := range w.skipped {
		if st := w.state[m]; st != propSuccess && st != propFailed && st != propDropped {
			w.t.Fatalf("message %+v (state %d) was skipped by a restarted receiver, and its sender does not know it was delivered", m, st)
		}
	}
	for m, st := range w.state {
		if st == propSuccess && w.got[m] != 1 {
			w.t.Fatalf("message %+v completed successfully but was delivered %d times", m, w.got[m])
		}
		if st == propFailed && w.got[m] == 1 {
			w.failedGot++
		}
	}
}

func TestSessionProperty(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	if v, err := strconv.Atoi(os.Getenv("ETHERGM_PROP_SEEDS")); err == nil && v > 0 {
		seeds = v // a longer run: ETHERGM_PROP_SEEDS=2000
	}
	var msgs, delivered, forged, restarts, restartsA, failedGot int
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w := newPropWorld(t, seed)
			w.run(600)
			w.heal()
			msgs += len(w.state)
			delivered += len(w.got)
			forged += w.forged
			restarts += int(w.inc)
			restartsA += w.ainc
			failedGot += w.failedGot
		})
	}
	t.Logf("%d seeds: %d messages sent, %d delivered (%d of them completed with an error status), %d forged or stray frames, %d sender and %d receiver restarts",
		seeds, msgs, delivered, failedGot, forged, restarts, restartsA)
}
