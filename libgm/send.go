//go:build cgo

package main

/*
#include "egm.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/ethergm/ethergm/gm"
)

// The kinds of egm_send (api.c's enum).
const (
	kindSend = iota
	kindSendLegacy
	kindDatagram
	kindPut
	kindGet
	kindResume
	kindDrop
	kindPutLegacy
)

var kindCall = [...]string{"gm_send_with_callback", "gm_send", "gm_datagram_send", "gm_put", "gm_get", "gm_resume_sending", "gm_drop_sends", "gm_directed_send"}

// bytesAt is the C memory [ptr, ptr+n) as a slice, for the port to read or
// write while the send or buffer is its own.
func bytesAt(ptr unsafe.Pointer, n uint64) []byte {
	if ptr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(ptr), n)
}

func (cp *port) rec() *sendRec {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if n := len(cp.free); n > 0 {
		r := cp.free[n-1]
		cp.free = cp.free[:n-1]
		return r
	}
	return new(sendRec)
}

func (cp *port) putRec(r *sendRec) {
	*r = sendRec{}
	cp.mu.Lock()
	cp.free = append(cp.free, r)
	cp.mu.Unlock()
}

// sent is every send's gm.SendCallback: it runs inside gm_unknown, on the
// program's thread, and calls the program's callback.
func (cp *port) sent(_ *gm.Port, ctx any, st gm.Status) {
	r := ctx.(*sendRec)
	fn, c, legacy := r.fn, r.ctx, r.legacy
	cp.putRec(r)
	if legacy != nil {
		cp.mu.Lock()
		cp.legacy = append(cp.legacy, legacy)
		cp.pending.Add(1)
		cp.mu.Unlock()
		return
	}
	if fn != nil {
		C.egm_call_send(fn, cp.c, c, C.gm_status_t(st))
	}
}

//export egm_send
func egm_send(c *C.struct_gm_port, kind C.int, local unsafe.Pointer, arg C.gm_u64_t, length C.gm_size_t,
	size, pri, node C.uint, port C.int, fn C.gm_send_completion_callback_t, ctx unsafe.Pointer) {
	cp := must(c, kindCall[kind])
	cp.drain()
	r := cp.rec()
	r.fn, r.ctx = fn, ctx
	n := uint64(length)
	pr, nd, pt := gm.Priority(pri), gm.NodeID(node), int(port)
	if uint(size) > 255 || n > gm.MaxTransferLen {
		cp.refuse(kind, r, fmt.Errorf("%w: length %d or size %d out of range", gm.ErrLength, n, uint(size)))
		return
	}
	var err error
	switch kind {
	case kindSend:
		err = cp.p.SendWithCallback(bytesAt(local, n), uint8(size), int(n), pr, nd, pt, cp.onSent, r)
	case kindSendLegacy:
		r.legacy = local
		if local == nil {
			// GM_SENT_EVENT's list ends at a null pointer: a message
			// at address 0 cannot be reported.
			err = fmt.Errorf("gm: a message at address NULL: pass a buffer")
			break
		}
		err = cp.p.SendWithCallback(bytesAt(local, n), uint8(size), int(n), pr, nd, pt, cp.onSent, r)
	case kindDatagram:
		msg := bytesAt(local, n)
		if local == nil {
			*(*uint32)(unsafe.Pointer(&r.word)) = uint32(arg)
			msg = r.word[:min(n, 4)]
		}
		err = cp.p.DatagramSend(msg, uint8(size), int(n), pr, nd, pt, cp.onSent, r)
	case kindPut, kindPutLegacy:
		if kind == kindPutLegacy {
			// Reported in GM_SENT_EVENT, as gm_send's messages.
			r.legacy = local
			if local == nil {
				err = fmt.Errorf("gm: a source at address NULL: pass a buffer")
				break
			}
		}
		err = cp.p.Put(bytesAt(local, n), gm.RemotePtr(arg), int(n), pr, nd, pt, cp.onSent, r)
	case kindGet:
		err = cp.p.Get(gm.RemotePtr(arg), bytesAt(local, n), int(n), pr, nd, pt, cp.onSent, r)
	case kindResume:
		err = cp.p.ResumeSending(pr, nd, pt, cp.onSent, r)
	case kindDrop:
		err = cp.p.DropSends(pr, nd, pt, cp.onSent, r)
	}
	if err != nil {
		cp.refuse(kind, r, err)
	}
}

// refuse reports a send the port refused: one line on stderr, and the
// program's callback, with the status that says why, at the next
// gm_unknown (GM's void calls have no other way to say it).
func (cp *port) refuse(kind C.int, r *sendRec, err error) {
	st := status(err)
	fmt.Fprintf(os.Stderr, "libgm: %s: %v (the callback gets %s)\n", kindCall[kind], err, gm.Status(st))
	d := localDone{fn: r.fn, ctx: r.ctx, st: st}
	legacy := r.legacy
	cp.putRec(r)
	cp.mu.Lock()
	if legacy != nil {
		// gm_send has no callback: its message is reported sent (GM's
		// only completion), after the line above.
		cp.legacy = append(cp.legacy, legacy)
	} else {
		cp.local = append(cp.local, d)
	}
	cp.pending.Add(1)
	cp.mu.Unlock()
}

//export egm_provide_receive_buffer
func egm_provide_receive_buffer(c *C.struct_gm_port, ptr unsafe.Pointer, size, pri, tag C.uint) {
	cp := must(c, "gm_provide_receive_buffer")
	cp.drain()
	cp.provide(ptr, size, pri, tag)
}

// The provide queue (struct gm_port in egm.h): C appends, Go drains.
func (cp *port) lockQueue() {
	l := (*uint32)(unsafe.Pointer(&cp.c.lock))
	for !atomic.CompareAndSwapUint32(l, 0, 1) {
	}
}

func (cp *port) unlockQueue() { atomic.StoreUint32((*uint32)(unsafe.Pointer(&cp.c.lock)), 0) }

// drain hands the queued buffers to the port, in the order provided.
func (cp *port) drain() {
	if atomic.LoadUint32((*uint32)(unsafe.Pointer(&cp.c.nprovide))) == 0 {
		return
	}
	var q [C.EGM_PROVIDE_QUEUE]C.struct_egm_provide
	cp.lockQueue()
	n := copy(q[:], cp.c.provide[:cp.c.nprovide])
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&cp.c.nprovide)), 0)
	cp.unlockQueue()
	for _, x := range q[:n] {
		cp.provide(x.ptr, x.size, x.priority, x.tag)
	}
}

// sleep marks the port while the calling thread sleeps in f: providers
// then hand their buffers to the port themselves.
func (cp *port) sleep(f func() *gm.Event) *gm.Event {
	s := (*uint32)(unsafe.Pointer(&cp.c.sleeping))
	cp.lockQueue()
	atomic.AddUint32(s, 1)
	cp.unlockQueue()
	cp.drain()
	e := f()
	cp.lockQueue()
	atomic.AddUint32(s, ^uint32(0))
	cp.unlockQueue()
	return e
}

func (cp *port) provide(ptr unsafe.Pointer, size, pri, tag C.uint) {
	if size > 31 || (ptr == nil && size > 3) || tag > 255 {
		fmt.Fprintf(os.Stderr, "libgm: gm_provide_receive_buffer: buffer %p of size %d, tag %d: want a buffer of size 3..31 and a tag 0..255\n", ptr, uint(size), uint(tag))
		return
	}
	// GM's buffer has no length: the port writes only the message's
	// bytes, so the buffer is as long as its size class allows (programs
	// provide short buffers of large sizes on purpose).
	buf := bytesAt(ptr, uint64(gm.MaxLengthForSize(uint8(size))))
	if err := cp.p.ProvideReceiveBuffer(buf, uint8(size), gm.Priority(pri), uint8(tag)); err != nil {
		fmt.Fprintf(os.Stderr, "libgm: gm_provide_receive_buffer: %v\n", err)
	}
}

//export egm_set_acceptable_sizes
func egm_set_acceptable_sizes(c *C.struct_gm_port, pri C.enum_gm_priority, mask C.gm_size_t) C.gm_status_t {
	return status(must(c, "gm_set_acceptable_sizes").p.SetAcceptableSizes(gm.Priority(pri), uint64(mask)))
}

// Offsets of gm_recv_event_t's fields (checked against the C layout by
// init).
const (
	offMessage  = 64 - 32
	offBuffer   = 64 - 24
	offLength   = 64 - 12
	offSender   = 64 - 8
	offTag      = 64 - 4
	offSize     = 64 - 3
	offSendPort = 64 - 2
	offType     = 64 - 1
	offSentList = 64 - 16
)

func init() {
	want := []int{64, offMessage, offBuffer, offLength, offSender, offTag, offSize, offSendPort, offType, offSentList, 8}
	for i, w := range want {
		if got := int(C.egm_layout(C.int(i))); got != w {
			panic(fmt.Sprintf("libgm: gm.h's event layout (field %d at %d, want %d) does not match the library", i, got, w))
		}
	}
}

type eventBytes = [64]byte

func putBE16(b []byte, v uint16) { b[0], b[1] = byte(v>>8), byte(v) }
func putBE32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
func putBE64(b []byte, v uint64) { putBE32(b, uint32(v>>32)); putBE32(b[4:], uint32(v)) }

// event writes e into the port's C event and returns it.
func (cp *port) event(e *gm.Event) *C.gm_recv_event_t {
	cp.last, cp.lastLocal = e, false
	ev := &cp.c.ev
	b := (*eventBytes)(unsafe.Pointer(ev))
	t := e.Type
	if t.IsRecv() {
		// GM points message at the data for every receive event (GM's
		// own example reads it on GM_RECV_EVENT): the buffer, or for
		// FAST events the copy in the port's C memory.
		msg := unsafe.Pointer(unsafe.SliceData(e.Buffer))
		if t.IsFast() {
			fast := (*[C.GM_MAX_FAST_RECV_BYTES]byte)(unsafe.Pointer(&cp.c.fast[0]))
			copy(fast[:], e.Message)
			msg = unsafe.Pointer(&cp.c.fast[0])
		}
		putBE64(b[offMessage:], uint64(uintptr(msg)))
		putBE64(b[offBuffer:], uint64(uintptr(unsafe.Pointer(unsafe.SliceData(e.Buffer)))))
		putBE32(b[offLength-4:], 0)
		putBE32(b[offLength:], uint32(e.Length))
		putBE16(b[offSender:], uint16(e.SenderNode))
		putBE16(b[offSender+2:], 0)
		b[offTag], b[offSize], b[offSendPort] = e.Tag, e.Size, byte(e.SenderPort)
	}
	b[offType] = byte(t)
	return ev
}

// synthetic returns an event of type t that the library made itself.
func (cp *port) synthetic(t byte) *C.gm_recv_event_t {
	cp.last, cp.lastLocal = nil, false
	b := (*eventBytes)(unsafe.Pointer(&cp.c.ev))
	*b = eventBytes{}
	b[offType] = t
	return &cp.c.ev
}

// libraryEvent returns the event for the completions the library holds:
// GM_SENT_EVENT with the messages of gm_send that completed, else a
// GM_SENT_TOKENS_EVENT whose gm_unknown runs the refused sends' callbacks.
func (cp *port) libraryEvent() *C.gm_recv_event_t {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if len(cp.legacy) > 0 {
		n := min(len(cp.legacy), len(cp.c.sent_list)-1)
		list := unsafe.Slice((*C.gm_up_n_t)(unsafe.Pointer(&cp.c.sent_list[0])), len(cp.c.sent_list))
		for i := 0; i < n; i++ {
			putBE64((*[8]byte)(unsafe.Pointer(&list[i]))[:], uint64(uintptr(cp.legacy[i])))
		}
		list[n] = 0
		cp.legacy = cp.legacy[:copy(cp.legacy, cp.legacy[n:])]
		cp.pending.Add(-int32(n))
		ev := cp.synthetic(C.GM_SENT_EVENT)
		b := (*eventBytes)(unsafe.Pointer(ev))
		putBE64(b[offSentList:], uint64(uintptr(unsafe.Pointer(&cp.c.sent_list[0]))))
		return ev
	}
	ev := cp.synthetic(C.GM_SENT_TOKENS_EVENT)
	cp.lastLocal = true
	return ev
}

// Modes of egm_receive.
const (
	recvPoll = iota
	recvBlocking
	recvNoSpin
)

//export egm_receive
func egm_receive(c *C.struct_gm_port, mode C.int) *C.gm_recv_event_t {
	cp := get(c)
	if cp == nil {
		must(c, "gm_receive")
	}
	cp.drain()
	if e := cp.stash; e != nil {
		cp.stash = nil
		return cp.event(e)
	}
	if cp.pending.Load() > 0 {
		return cp.libraryEvent()
	}
	var e *gm.Event
	switch mode {
	case recvPoll:
		e = cp.p.Receive()
	case recvBlocking:
		e = cp.sleep(cp.p.BlockingReceive)
	default:
		// GM's no-spin receive hands out _GM_SLEEP_EVENT when nothing
		// is pending; gm_unknown then sleeps without holding the port,
		// so that the program's other threads may use it meanwhile.
		e = cp.p.Receive()
		if e.Type == gm.NoRecvEvent {
			return cp.synthetic(C._GM_SLEEP_EVENT)
		}
	}
	return cp.event(e)
}

//export egm_unknown
func egm_unknown(c *C.struct_gm_port, ev *C.gm_recv_event_t) {
	cp := must(c, "gm_unknown")
	cp.drain()
	if ev == nil {
		return
	}
	t := (*eventBytes)(unsafe.Pointer(ev))[offType]
	switch {
	case t == C._GM_SLEEP_EVENT:
		// The event that wakes the sleep is the next gm_receive's.
		cp.stash = cp.sleep(cp.p.BlockingReceiveNoSpin)
	case t == C.GM_SENT_TOKENS_EVENT && cp.lastLocal:
		cp.lastLocal = false
		cp.mu.Lock()
		done := cp.local
		cp.local = nil
		cp.pending.Add(-int32(len(done)))
		cp.mu.Unlock()
		for _, d := range done {
			if d.fn != nil {
				C.egm_call_send(d.fn, cp.c, d.ctx, d.st)
			}
		}
	case t == C.GM_SENT_EVENT:
		// The tokens of gm_send came back when its completion was
		// recorded; nothing is left to do.
	default:
		if e := cp.last; e != nil && byte(e.Type) == t {
			cp.last = nil
			cp.p.Unknown(e)
		}
	}
}

//export egm_receive_pending
func egm_receive_pending(c *C.struct_gm_port) C.int {
	cp := must(c, "gm_receive_pending")
	cp.drain()
	return cbool(cp.stash != nil || cp.pending.Load() > 0 || cp.p.ReceivePending())
}

//export egm_next_event_peek
func egm_next_event_peek(c *C.struct_gm_port, sender *C.gm_u16_t) C.int {
	cp := must(c, "gm_next_event_peek")
	cp.drain()
	if cp.stash == nil {
		if cp.pending.Load() > 0 {
			if sender != nil {
				*sender = 0
			}
			cp.mu.Lock()
			legacy := len(cp.legacy) > 0
			cp.mu.Unlock()
			if legacy {
				return C.GM_SENT_EVENT
			}
			return C.GM_SENT_TOKENS_EVENT
		}
		e := cp.p.Receive()
		if e.Type == gm.NoRecvEvent {
			return 0
		}
		cp.stash = e
	}
	if sender != nil {
		*sender = C.gm_u16_t(cp.stash.SenderNode)
	}
	return C.int(cp.stash.Type)
}
