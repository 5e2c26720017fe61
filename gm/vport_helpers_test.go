package gm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// Verified traffic between ports (rather than hosts, as in
// traffic_helpers_test.go): message k of the stream from (node, port) to
// (node, port) at a priority is a pure function of the stream and k
// (vMessage), and starts with the stream's four coordinates and k, so a
// receiving port checks every message against the one it expects next
// from its sender: content, sender node, sender port, target port, exactly
// once and in order per stream.

// vStream is a stream of verified messages.
type vStream struct {
	SrcNode, DstNode gm.NodeID
	SrcPort, DstPort int
	Pri              gm.Priority
}

func (s vStream) key() uint64 {
	return uint64(s.SrcNode)<<40 | uint64(s.DstNode)<<16 | uint64(s.SrcPort)<<8 | uint64(s.DstPort)<<1 | uint64(s.Pri)
}

// Message lengths of vMessage.
const (
	vMinLen = 20
	vMaxLen = 3000
)

// vSizes are the size classes of vMessage's messages.
func vSizes() (lo, hi uint8) { return gm.MinSizeForLength(vMinLen), gm.MinSizeForLength(vMaxLen) }

// vMessage returns message k of stream s: 20 to 3000 bytes, the size
// class the smallest that holds it.
func vMessage(s vStream, k uint32) (uint8, []byte) {
	r := rand.New(rand.NewPCG(s.key(), uint64(k)))
	msg := make([]byte, vMinLen+r.IntN(vMaxLen-vMinLen+1))
	for i := range msg {
		msg[i] = byte(r.Uint32())
	}
	binary.BigEndian.PutUint32(msg, uint32(s.SrcNode))
	binary.BigEndian.PutUint32(msg[4:], uint32(s.DstNode))
	msg[8], msg[9], msg[10] = byte(s.SrcPort), byte(s.DstPort), byte(s.Pri)
	binary.BigEndian.PutUint32(msg[12:], k)
	return gm.MinSizeForLength(len(msg)), msg
}

// vPort is one port's side of the verified traffic: it checks what
// arrives and counts its sends' completions.
type vPort struct {
	name string
	p    *gm.Port
	id   int
	node gm.NodeID
	l    *loop

	mu   sync.Mutex
	next map[uint64]uint32 // next k expected per incoming stream
	got  int
	errs []string

	ok, bad atomic.Int64
	sendErr []string // under mu
}

// vBuffers is the number of receive buffers provided per (size,
// priority): 2 x 8 sizes x 8 = 128 of a port's 253 tokens.
const vBuffers = 8

// startVPort provides p's receive buffers and starts its event loop.
func startVPort(name string, p *gm.Port) (*vPort, error) {
	v := &vPort{name: name, p: p, id: p.ID(), node: p.NodeID(), next: map[uint64]uint32{}}
	lo, hi := vSizes()
	for size := lo; size <= hi; size++ {
		for pri := gm.LowPriority; pri <= gm.HighPriority; pri++ {
			for range vBuffers {
				if err := p.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, pri, size); err != nil {
					return nil, fmt.Errorf("%s: provide: %w", name, err)
				}
			}
		}
	}
	v.l = startLoop(p, v.onRecv)
	return v, nil
}

func (v *vPort) onRecv(e *gm.Event) {
	s := vStream{SrcNode: e.SenderNode, DstNode: v.node, SrcPort: e.SenderPort, DstPort: v.id, Pri: e.Priority}
	v.mu.Lock()
	k := v.next[s.key()]
	v.next[s.key()] = k + 1
	v.got++
	size, want := vMessage(s, k)
	if (e.Size != size || !bytes.Equal(e.Message, want)) && len(v.errs) < 10 {
		what := "changed"
		if len(e.Message) >= 16 {
			what = fmt.Sprintf("carries node %d port %d -> node %d port %d pri %d message %d",
				binary.BigEndian.Uint32(e.Message), e.Message[8], binary.BigEndian.Uint32(e.Message[4:]), e.Message[9], e.Message[10], binary.BigEndian.Uint32(e.Message[12:]))
		}
		v.errs = append(v.errs, fmt.Sprintf("%s: message %d of %+v (size %d, %d bytes; want size %d, %d bytes): %s",
			v.name, k, s, e.Size, len(e.Message), size, len(want), what))
	}
	v.mu.Unlock()
	_ = v.p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
}

func (v *vPort) sent(_ *gm.Port, ctx any, st gm.Status) {
	if st == gm.Success {
		v.ok.Add(1)
		return
	}
	v.bad.Add(1)
	v.mu.Lock()
	if len(v.sendErr) < 10 {
		v.sendErr = append(v.sendErr, fmt.Sprintf("%s: send %v: %v", v.name, ctx, st))
	}
	v.mu.Unlock()
}

// send sends n messages on each of streams (all from v), interleaved,
// waiting when the port has no send token; it gives up at deadline.
func (v *vPort) send(streams []vStream, n uint32, deadline time.Time) error {
	for k := range n {
		for _, s := range streams {
			size, msg := vMessage(s, k)
			for {
				err := v.p.SendWithCallback(msg, size, len(msg), s.Pri, s.DstNode, s.DstPort, v.sent, fmt.Sprintf("%d:%d->%d:%d/%d#%d", s.SrcNode, s.SrcPort, s.DstNode, s.DstPort, s.Pri, k))
				if err == nil {
					break
				}
				if !errors.Is(err, gm.ErrNoSendToken) {
					return fmt.Errorf("%s: send: %w", v.name, err)
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%s: no send token until the deadline", v.name)
				}
				time.Sleep(200 * time.Microsecond)
			}
		}
	}
	return nil
}

// vCounts is a port's progress: messages received, sends completed, the
// first errors.
type vCounts struct {
	Got, OK, Bad int
	Errs         []string
}

func (v *vPort) counts() vCounts {
	v.mu.Lock()
	defer v.mu.Unlock()
	return vCounts{Got: v.got, OK: int(v.ok.Load()), Bad: int(v.bad.Load()), Errs: append(append([]string(nil), v.errs...), v.sendErr...)}
}

// check reports an error unless exactly n messages arrived on each of
// streams (all to v) and nothing else arrived.
func (v *vPort) check(streams []vStream, n uint32) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.errs) > 0 || len(v.sendErr) > 0 {
		return errors.New(fmt.Sprint(append(append([]string(nil), v.errs...), v.sendErr...)))
	}
	for _, s := range streams {
		if got := v.next[s.key()]; got != n {
			return fmt.Errorf("%s: %d messages of %+v, want %d", v.name, got, s, n)
		}
	}
	if v.got != len(streams)*int(n) {
		return fmt.Errorf("%s: %d messages, want %d (%d streams of %d)", v.name, v.got, len(streams)*int(n), len(streams), n)
	}
	return nil
}
