package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// Remote memory access: GM's directed sends (gm_put), gets (gm_get) and
// gm_allow_remote_memory_access.
//
// A port exposes memory by registering it: each registered region gets a
// 24-bit id, and a remote pointer is region id << RegionShift | offset.
// Pointers are plain 64-bit numbers that the application passes to its
// peers (in a message, say) and on which it may do arithmetic within the
// region, like GM's gm_remote_ptr_t. Nothing is reachable from the network
// until AllowRemoteAccess is called; from then on every registered region
// is (GM's all-or-nothing rule).
//
// With a Memory (SetMemory), remote pointers are instead addresses in it,
// GM's own model: the Memory answers for the pages its owner registered,
// and the region table is not consulted.
//
// Transfers travel in the sender's ordinary stream to (node, port,
// priority): a PUT transfer and a GET request are queued, numbered,
// segmented, acknowledged and retransmitted exactly like a message, so
// they are reliable and ordered with the stream's sends. A GET is answered
// by a GOT transfer queued on the target's reply stream back to the
// requester (reply.go), apart from the target's own sends, or, for a GET
// without wire.FlagSepReply (a requester that predates reply streams), on
// its stream of the GET's priority (an internal record that takes no send
// token of the target). The
// requester's GET completes when the GET is acknowledged and the whole GOT
// transfer has arrived.
//
// Refusals use the existing NACK reasons: a PUT or GET to a port that has
// not allowed remote access, to an unknown region or beyond a region's end
// is refused with NackRejected (the sender's callback gets
// StatusSendRejected and the stream is disabled, as for any rejected
// send); a GET that finds no free reply record, or the stream its reply
// goes on disabled, is refused with NackNoBuffer (the requester backs off
// and retries, and fails with StatusSendTimedOut after the progress
// timeout).

const (
	// RegionShift is the position of the region id in a remote pointer:
	// pointer = id << RegionShift | offset.
	RegionShift = 40
	// MaxRegionLen bounds the length of a registered region (the offset
	// field of a pointer).
	MaxRegionLen = 1 << RegionShift
	offMask      = MaxRegionLen - 1
	maxID        = 1<<(64-RegionShift) - 1
	// MaxTransferLen is the longest put or get: GM's
	// gm_max_length_for_size(31).
	MaxTransferLen = 1<<31 - 8
	// ReplySlots is the number of GETs a port serves at once (GM's LANai X
	// had 8 GET reply buffers). A GET beyond them is refused with
	// NackNoBuffer and retried by its sender.
	ReplySlots = 32
)

// Errors of the remote memory calls.
var (
	ErrRegion      = errors.New("gm: pointer does not start a memory region registered with this port")
	ErrRegionEmpty = errors.New("gm: cannot register an empty memory region")
	ErrRegionLarge = errors.New("gm: memory region longer than 2^40 bytes")
	ErrRegionsFull = errors.New("gm: every region id (2^24-1) is in use")
)

// Memory is the target memory of a port whose remote pointers are its
// process's virtual addresses (GM's own model, for C callers): Slice
// returns the n bytes at addr if every page they touch is registered, and
// false otherwise. The engine consults it, instead of the region table,
// when it is set (SetMemory); it calls Slice when a PUT or GET arrives,
// again for every PUT frame it writes (memory deregistered meanwhile is
// not written), and keeps a GET's slice until the reply is sent, so the
// owner must call DetachMemory before the memory stops being mapped.
type Memory interface {
	Slice(addr uint64, n uint32) ([]byte, bool)
}

type region struct {
	buf  []byte
	live bool // registered; PUT frames are written only while live
}

// getOp is a GET issued by this port.
type getOp struct {
	id    uint32
	rec   int32  // its send record: send token, callback, context
	buf   []byte // the local buffer, exactly the length read
	node  uint32
	port  uint8
	pri   uint8
	acked bool   // the GET was acknowledged (its record left the stream)
	done  bool   // the whole GOT transfer arrived
	dead  bool   // completed or failed: later GOT data is discarded
	since Time   // acked: when the last sign of progress came
	rcv   uint32 // the GET's reverse stream's rcvNxt and session at since
	sess  uint32
	rrcv  uint32 // the reply stream's rcvNxt and session at since
	rsess uint32
	laddr [wire.RemoteAddrLen]byte
}

// rdmaRx is one PUT, GET or GOT transfer being received (rxMsg.slot).
type rdmaRx struct {
	raddr uint64
	dst   []byte  // where the payload goes (PUT, GOT); nil: discard
	reg   *region // PUT: the target region
	roff  uint64  // PUT: the offset of dst in the region (the address, with a Memory)
	mem   bool    // PUT: into the engine's Memory (each frame looks its bytes up)
	op    *getOp  // GOT: the get it answers
	got   int32   // GET: its reply record
	rpri  uint8   // GET: the stream its reply goes on (replyPri: the reply stream)
	next  int32   // free list
}

type rdmaState struct {
	allowed    bool
	regions    map[uint32]*region
	nextRegion uint32
	gets       map[uint32]*getOp
	getByRec   map[int32]*getOp
	nextGet    uint32
	rx         []rdmaRx
	rxFree     int32
	gotBase    int32       // index in Engine.recs of the first reply record; 0 = none yet
	gotFree    int32       // free list of reply records
	gotStream  []*txStream // the stream each reply record is queued on
	resume     []*txStream // streams a failed GOT disabled, to re-enable in Tick
	mem        Memory      // set: remote pointers are addresses in it (SetMemory)
	gotAddr    []uint64    // with mem: the address each reply record reads
}

func (e *Engine) rd() *rdmaState {
	if e.rdma == nil {
		e.rdma = &rdmaState{
			regions: map[uint32]*region{}, gets: map[uint32]*getOp{}, getByRec: map[int32]*getOp{},
			rxFree: -1, gotFree: -1, nextRegion: 1,
			// Get ids start at a random point in every incarnation. A
			// target drops the replies (GOT) it holds for a process
			// that died when it meets the successor (dropGots); the
			// random start is what is left against a reply queued on
			// a stream that had no session yet, whose first handshake
			// the successor answers (the target cannot tell it from
			// its predecessor then): 2^-24 that it matches a get of
			// the successor.
			nextGet: e.random32(),
		}
	}
	return e.rdma
}

// newID returns an unused nonzero 24-bit id, starting at *next.
func newID(next *uint32, used func(uint32) bool) (uint32, bool) {
	for n := 0; n < maxID; n++ {
		id := *next & maxID
		*next = id + 1
		if id != 0 && !used(id) {
			return id, true
		}
	}
	return 0, false
}

// RegisterMemory registers buf for remote access (gm_register_memory) and
// returns the remote pointer of its first byte. Peers can reach it once
// AllowRemoteAccess has been called.
func (e *Engine) RegisterMemory(buf []byte) (uint64, error) {
	if len(buf) == 0 {
		return 0, ErrRegionEmpty
	}
	if uint64(len(buf)) > MaxRegionLen {
		return 0, ErrRegionLarge
	}
	rd := e.rd()
	id, ok := newID(&rd.nextRegion, func(id uint32) bool { return rd.regions[id] != nil })
	if !ok {
		return 0, ErrRegionsFull
	}
	rd.regions[id] = &region{buf: buf, live: true}
	return uint64(id) << RegionShift, nil
}

// DeregisterMemory removes the region whose first byte ptr points to.
// Transfers that arrive later are refused; the rest of a PUT already being
// received is discarded.
func (e *Engine) DeregisterMemory(ptr uint64) error {
	rd := e.rd()
	id := uint32(ptr >> RegionShift)
	r := rd.regions[id]
	if r == nil || ptr&offMask != 0 {
		return ErrRegion
	}
	r.live = false
	delete(rd.regions, id)
	return nil
}

// SetMemory makes m this engine's target memory: remote pointers of PUTs
// and GETs are addresses in m, and the region table is not consulted (see
// Memory). Call it before AllowRemoteAccess and before any traffic.
func (e *Engine) SetMemory(m Memory) { e.rd().mem = m }

// DetachMemory stops every reply (GOT) still to be sent from reading
// [addr, addr+n) of the engine's Memory: a reply that reads any of it
// takes a copy of its source now and sends the copy, so the memory may be
// unmapped once DetachMemory returns. The owner of the Memory calls it
// when it deregisters memory. The get reads the memory as it is when it
// was deregistered, a moment at which it was still registered.
func (e *Engine) DetachMemory(addr, n uint64) {
	rd := e.rdma
	if rd == nil || rd.mem == nil || rd.gotBase == 0 {
		return
	}
	for k := range ReplySlots {
		r := &e.recs[rd.gotBase+int32(k)]
		if r.kind != recGot || r.msg == nil {
			continue
		}
		lo := rd.gotAddr[k]
		if lo < addr+n && addr < lo+uint64(len(r.msg)) {
			r.msg = append([]byte(nil), r.msg...)
			rd.gotAddr[k] = 0
		}
	}
}

// Regions returns the number of registered regions.
func (e *Engine) Regions() int {
	if e.rdma == nil {
		return 0
	}
	return len(e.rdma.regions)
}

// AllowRemoteAccess is gm_allow_remote_memory_access: from now on peers
// may put into and get from every registered region. It cannot be undone.
func (e *Engine) AllowRemoteAccess() {
	rd := e.rd()
	rd.allowed = true
	if rd.gotBase != 0 {
		return
	}
	// The reply records follow the send records; no pointer into e.recs
	// is held across engine calls, so growing it is safe here.
	base := int32(len(e.recs))
	e.recs = append(e.recs, make([]sendRec, ReplySlots)...)
	for k := int32(0); k < ReplySlots; k++ {
		e.recs[base+k] = sendRec{kind: recGot, next: base + k + 1}
	}
	e.recs[base+ReplySlots-1].next = -1
	rd.gotBase, rd.gotFree = base, base
	rd.gotStream = make([]*txStream, ReplySlots)
	rd.gotAddr = make([]uint64, ReplySlots)
}

// RemoteAccessAllowed reports whether AllowRemoteAccess was called.
func (e *Engine) RemoteAccessAllowed() bool { return e.rdma != nil && e.rdma.allowed }

// PendingGets returns the number of this port's gets that have not
// completed.
func (e *Engine) PendingGets() int {
	if e.rdma == nil {
		return 0
	}
	return len(e.rdma.gets)
}

func rdmaCheck(length, bufLen int, pri, port uint8) error {
	if pri >= 2 {
		return ErrPriority
	}
	if port >= wire.NumPorts {
		return ErrPort
	}
	if length < 0 || length > bufLen || length > MaxTransferLen {
		return ErrLength
	}
	return nil
}

// rdmaSegs returns the number of frames of a PUT or GOT transfer of n
// bytes.
func (e *Engine) rdmaSegs(n uint32) uint32 {
	seg := uint32(e.cfg.SegLen - wire.RemoteAddrLen)
	if n == 0 {
		return 1
	}
	return (n + seg - 1) / seg
}

func rdmaType(k recKind) wire.Type {
	switch k {
	case recPut:
		return wire.TypePut
	case recGet:
		return wire.TypeGet
	}
	return wire.TypeGot
}

// wireMsgLen is the msglen field of the record's frames.
func (r *sendRec) wireMsgLen() uint32 {
	if r.kind == recGet {
		return r.xlen
	}
	return r.length
}

// stream returns the sending stream for a new transfer, or an error.
func (e *Engine) rdmaStream(length, bufLen int, pri uint8, node uint32, port uint8) (*txStream, error) {
	if err := rdmaCheck(length, bufLen, pri, port); err != nil {
		return nil, err
	}
	p := e.peer(node)
	if p == nil || !e.resolve(p) {
		return nil, ErrNode
	}
	s := e.tx(p, port, pri)
	if s.qLen >= qCap-1 || !e.sendTokens.TryAcquire() {
		return nil, ErrNoSendToken
	}
	return s, nil
}

// enqueue appends record i to s's queue (as Send does) and, if pump,
// transmits what the window allows.
func (e *Engine) enqueue(now Time, s *txStream, i int32, pump bool) {
	if s.qLen == 0 {
		s.lastHeard, s.lastAdvance = now, now
	}
	s.q[(s.qHead+s.qLen)%qCap] = i
	s.qLen++
	e.activate(s)
	if pump && !s.disabled {
		e.pump(now, s)
		e.setDeadline(now)
	}
}

// Put queues a remote write (gm_put, gm_directed_send_with_callback) of
// local[:length] to the peer's memory at raddr. It takes a send token;
// the completion (StatusSuccess once every byte is in the target's memory
// and acknowledged) comes back from PopCompletion with cb and ctx.
func (e *Engine) Put(now Time, local []byte, raddr uint64, length int, pri uint8, node uint32, port uint8, cb, ctx any) error {
	s, err := e.rdmaStream(length, len(local), pri, node, port)
	if err != nil {
		return err
	}
	i := e.allocRec()
	n := uint32(length)
	e.recs[i] = sendRec{msg: local, length: n, kind: recPut, nseg: e.rdmaSegs(n), cb: cb, ctx: ctx, next: -1, raddr: raddr}
	e.enqueue(now, s, i, true)
	return nil
}

// Get queues a remote read (gm_get) of length bytes at the peer's raddr
// into local[:length]. It takes a send token; the completion
// (StatusSuccess once every byte is in local) comes back from
// PopCompletion with cb and ctx. local must not be touched until then.
func (e *Engine) Get(now Time, raddr uint64, local []byte, length int, pri uint8, node uint32, port uint8, cb, ctx any) error {
	s, err := e.rdmaStream(length, len(local), pri, node, port)
	if err != nil {
		return err
	}
	rd := e.rd()
	id, ok := newID(&rd.nextGet, func(id uint32) bool { return rd.gets[id] != nil })
	if !ok {
		e.sendTokens.Release()
		return ErrNoSendToken
	}
	i := e.allocRec()
	op := &getOp{id: id, rec: i, buf: local[:length], node: node, port: port, pri: pri}
	binary.BigEndian.PutUint64(op.laddr[:], uint64(id)<<RegionShift)
	rd.gets[id], rd.getByRec[i] = op, op
	e.recs[i] = sendRec{msg: op.laddr[:], length: wire.RemoteAddrLen, kind: recGet, nseg: 1, cb: cb, ctx: ctx, next: -1,
		raddr: raddr, xlen: uint32(length)}
	e.enqueue(now, s, i, true)
	return nil
}

func (rd *rdmaState) dropGet(op *getOp) {
	op.dead = true
	delete(rd.gets, op.id)
	delete(rd.getByRec, op.rec)
}

func (e *Engine) freeGot(i int32) {
	rd := e.rdma
	rd.gotStream[i-rd.gotBase] = nil
	e.recs[i] = sendRec{kind: recGot, next: rd.gotFree}
	rd.gotFree = i
}

// dropGots removes every reply (GOT) queued on s, sent or not, as dropped
// (no callback): s's receiver turned out to be a new incarnation of the
// requester's port (orphan), and a reply to a GET of the incarnation before
// must not reach it, where a get of its own that happens to have the same
// id and length (get ids are random 24-bit numbers) would take the data.
// The sender cannot tell a reply to the old incarnation from one to a GET
// the new one sent before the handshake told it apart: both are dropped
// (the new one's get fails with StatusSendTimedOut, as it does when its
// reply went out in the old session). It reports how many it dropped. The
// records left keep their order; the caller renumbers them (established).
func (e *Engine) dropGots(s *txStream) int {
	if rd := e.rdma; rd == nil || rd.gotBase == 0 {
		return 0
	}
	n, kept, assigned := 0, 0, s.qAssigned
	for k := 0; k < s.qLen; k++ {
		i := s.q[(s.qHead+k)%qCap]
		if e.recs[i].kind != recGot {
			s.q[(s.qHead+kept)%qCap] = i
			kept++
			continue
		}
		if k < s.qAssigned {
			assigned--
		}
		e.complete(i, StatusSendDropped)
		n++
	}
	s.qLen, s.qAssigned, s.cursor = kept, assigned, 0
	return n
}

// rdmaComplete is complete's hook for GET and GOT records. It reports
// true if the completion is consumed here (no callback now).
func (e *Engine) rdmaComplete(i int32, st Status) bool {
	rd := e.rdma
	if rd == nil {
		return false
	}
	switch e.recs[i].kind {
	case recGot:
		// Internal: no token, no callback. A GOT that failed disabled the
		// stream, which the application does not know about: re-enable it
		// (the application's sends behind it go ahead and report their own
		// fate).
		if s := rd.gotStream[i-rd.gotBase]; s != nil && st != StatusSuccess && st != StatusSendDropped {
			rd.resume = append(rd.resume, s)
		}
		e.freeGot(i)
		return true
	case recGet:
		op := rd.getByRec[i]
		if op == nil {
			return false
		}
		if st == StatusSuccess && !op.done {
			// Acknowledged: the target has the request; wait for the data.
			op.acked = true
			e.getProgress(op, e.lastNow)
			return true
		}
		rd.dropGet(op)
	}
	return false
}

// rdmaTick runs the RDMA timers (from Tick).
func (e *Engine) rdmaTick(now Time) {
	rd := e.rdma
	if rd == nil {
		return
	}
	for len(rd.resume) > 0 {
		s := rd.resume[len(rd.resume)-1]
		rd.resume = rd.resume[:len(rd.resume)-1]
		if s.disabled {
			e.reenable(now, s)
		}
	}
	for _, op := range rd.gets {
		if op.acked && !op.done && now-op.since > e.stallTimeout() && !e.getProgress(op, now) {
			// The target took the request, but nothing came from it since:
			// neither this get's data nor anything of the stream that
			// carries it (the reply may wait behind other transfers).
			rd.dropGet(op)
			e.complete(op.rec, StatusSendTimedOut)
		}
	}
}

// getProgress notes the state of the stream that carries op's reply and
// reports whether it moved since the last note (then op.since = now).
//
// The reply comes on the target's reply stream (reply.go), or, from a
// target before reply streams, on its stream of the GET's priority: both
// are watched.
func (e *Engine) getProgress(op *getOp, now Time) bool {
	var rcv, sess, rrcv, rsess uint32
	if p := e.peers[op.node]; p != nil {
		if rs := p.rx[op.port][op.pri]; rs != nil && rs.valid {
			rcv, sess = rs.rcvNxt, rs.session
		}
		if rs := p.rx[op.port][replyPri]; rs != nil && rs.valid {
			rrcv, rsess = rs.rcvNxt, rs.session
		}
	}
	moved := op.since == 0 || rcv != op.rcv || sess != op.sess || rrcv != op.rrcv || rsess != op.rsess
	if moved {
		op.rcv, op.sess, op.rrcv, op.rsess, op.since = rcv, sess, rrcv, rsess, now
	}
	return moved
}

// rdmaDeadline returns when rdmaTick has work, or 0 (from setDeadline).
func (e *Engine) rdmaDeadline() Time {
	rd := e.rdma
	if rd == nil {
		return 0
	}
	if len(rd.resume) > 0 {
		return 1 // at once
	}
	var d Time
	for _, op := range rd.gets {
		if op.acked && !op.done {
			if t := op.since + e.stallTimeout() + 1; d == 0 || t < d {
				d = t
			}
		}
	}
	return d
}

func (rd *rdmaState) allocRx() int {
	if rd.rxFree < 0 {
		rd.rx = append(rd.rx, rdmaRx{next: -1})
		return len(rd.rx) - 1
	}
	i := rd.rxFree
	rd.rxFree = rd.rx[i].next
	return int(i)
}

func (rd *rdmaState) freeRx(i int) {
	rd.rx[i] = rdmaRx{next: rd.rxFree}
	rd.rxFree = int32(i)
}

// lookup returns the n bytes at raddr in a registered region, if remote
// access is allowed and they lie inside one.
func (rd *rdmaState) lookup(raddr uint64, n uint32) (*region, []byte, bool) {
	if !rd.allowed {
		return nil, nil, false
	}
	if rd.mem != nil {
		if raddr+uint64(n) < raddr {
			return nil, nil, false // wraps
		}
		b, ok := rd.mem.Slice(raddr, n)
		return nil, b, ok
	}
	r := rd.regions[uint32(raddr>>RegionShift)]
	o := raddr & offMask
	if r == nil || o > uint64(len(r.buf)) || uint64(n) > uint64(len(r.buf))-o {
		return nil, nil, false
	}
	return r, r.buf[o : o+uint64(n)], true
}

// rdmaFrame is onSeq's hook for the checks of a PUT, GET or GOT frame h
// before its stream is looked at. It returns whether the frame is its
// transfer's first, the segment length it tells (a full segment that is
// not the last: see onSeq), and false if it is malformed.
func rdmaFrame(h wire.Header) (start bool, seg uint32, ok bool) {
	off, plen, msgLen := h.Offset(), uint32(h.PayloadLen()), h.MsgLen()
	start = off == 0
	if h.Type() == wire.TypeGet && (!start || plen != wire.RemoteAddrLen) {
		return false, 0, false
	}
	if plen > 0 && off+plen < msgLen {
		seg = plen
	}
	return start, seg, true
}

// rdmaPlace is onSeq's hook for a PUT, GET or GOT frame (h, seq) of
// transfer m of rs, which start tells whether it is the first of: the
// payload goes to registered memory (PUT) or to a get's buffer (GOT); a
// GET carries no data (rdmaNewMsg made its reply). It reports false if
// the frame is malformed or must wait.
func (e *Engine) rdmaPlace(now Time, rs *rxStream, m *rxMsg, seq uint32, h wire.Header, start bool) bool {
	typ := h.Type()
	if m.kind != typ {
		e.stats.Malformed++
		return false
	}
	x := &e.rdma.rx[m.slot]
	if typ == wire.TypePut && e.putBlocked(rs, m) {
		// An earlier put of the stream, still incomplete, writes some of
		// the same bytes: this frame must not land first. Dropped as if
		// lost; the sender resends it.
		e.stats.OutOfWindow++
		return false
	}
	if typ == wire.TypeGet {
		return true
	}
	plen := uint32(h.PayloadLen())
	o, ok := m.fits(seq, h, plen, start)
	if !ok || h.RemoteAddr() != x.raddr {
		e.stats.Malformed++
		return false
	}
	switch {
	case x.op != nil:
		if !x.op.dead {
			copy(x.dst[o:o+plen], h.Payload())
			x.op.since = now
		}
	case x.reg != nil:
		if x.reg.live {
			copy(x.dst[o:o+plen], h.Payload())
		}
	case x.mem:
		e.rdma.memWrite(x.roff+uint64(o), h.Payload()[:plen])
	}
	return true
}

// memWrite writes b at addr of the Memory, looked up again for every frame:
// pages deregistered since the transfer started are not written (those
// still registered are).
func (rd *rdmaState) memWrite(addr uint64, b []byte) {
	if dst, ok := rd.mem.Slice(addr, uint32(len(b))); ok {
		copy(dst, b)
		return
	}
	for len(b) > 0 { // page by page
		n := min(uint64(len(b)), memPage-addr%memPage)
		if dst, ok := rd.mem.Slice(addr, uint32(n)); ok {
			copy(dst, b[:n])
		}
		addr, b = addr+n, b[n:]
	}
}

// memPage is the page size of a Memory's registrations (GM_PAGE_LEN).
const memPage = 4096

// putBlocked reports whether an earlier PUT transfer of rs, still
// incomplete, overlaps the memory the PUT transfer m writes: m's frames
// must then wait, so that overlapping puts take effect in stream order.
func (e *Engine) putBlocked(rs *rxStream, m *rxMsg) bool {
	x := &e.rdma.rx[m.slot]
	for i := 0; i < rs.mLen; i++ {
		y := &rs.msgs[(rs.mHead+i)%rxMsgs]
		if y == m {
			break
		}
		if y.kind != wire.TypePut {
			continue
		}
		if z := &e.rdma.rx[y.slot]; (z.reg == x.reg && x.reg != nil || z.mem && x.mem) &&
			z.roff < x.roff+uint64(m.msgLen) && x.roff < z.roff+uint64(y.msgLen) {
			return true
		}
	}
	return false
}

// rdmaNewMsg is onSeq's hook for the first frame to arrive of a transfer:
// (frame, h) is a frame of the transfer that starts at startSeq. It checks
// the access (refusing the transfer with a NACK) and binds the transfer to
// its memory. It returns nil if the frame is refused or malformed.
func (e *Engine) rdmaNewMsg(rs *rxStream, frame []byte, h wire.Header, startSeq uint32) *rxMsg {
	rd := e.rd()
	typ, msgLen, plen, raddr := h.Type(), h.MsgLen(), uint32(h.PayloadLen()), h.RemoteAddr()
	var nseg, segLen uint32
	switch {
	case typ == wire.TypeGet:
		nseg = 1
	case h.Offset() == 0 && plen == msgLen:
		nseg, segLen = 1, plen
	case plen == 0 || plen > msgLen:
		e.stats.Malformed++
		return nil
	default:
		segLen = plen
		nseg = uint32((uint64(msgLen) + uint64(plen) - 1) / uint64(plen)) // no wrap near 2^32
	}
	x := rdmaRx{raddr: raddr, got: -1}
	switch typ {
	case wire.TypePut:
		r, dst, ok := rd.lookup(raddr, msgLen)
		if !ok {
			e.sendNackSeq(frame, h, wire.NackRejected, e.cfg.Port, rs, startSeq)
			return nil
		}
		x.reg, x.dst, x.roff = r, dst, raddr&offMask
		if rd.mem != nil {
			x.dst, x.roff, x.mem = nil, raddr, true
		}
	case wire.TypeGet:
		_, src, ok := rd.lookup(raddr, msgLen)
		if !ok {
			e.sendNackSeq(frame, h, wire.NackRejected, e.cfg.Port, rs, startSeq)
			return nil
		}
		x.rpri = rs.pri
		if h.Flags()&wire.FlagSepReply != 0 {
			x.rpri = replyPri // reply.go
		}
		ts := e.tx(rs.peer, rs.port, x.rpri)
		if rd.gotFree < 0 || ts.disabled || ts.qLen >= qCap-1 || !e.resolve(rs.peer) {
			// No reply record (or the reply stream is held, or the
			// requester's MAC is unknown for now): it backs off and asks
			// again. The reply stream is held only for the moment
			// between a failed reply and the next Tick (rdmaTick);
			// the application's sends never hold it.
			e.sendNackSeq(frame, h, wire.NackNoBuffer, e.cfg.Port, rs, startSeq)
			return nil
		}
		gi := rd.gotFree
		rd.gotFree = e.recs[gi].next
		e.recs[gi] = sendRec{msg: src, length: msgLen, kind: recGot, nseg: e.rdmaSegs(msgLen), next: -1,
			raddr: binary.BigEndian.Uint64(h.Payload())}
		rd.gotAddr[gi-rd.gotBase] = raddr
		x.got = gi
	case wire.TypeGot:
		// Never refused: the target's stream must not stall on a get this
		// port no longer waits for. Unknown or stale: the data is dropped.
		op := rd.gets[uint32(raddr>>RegionShift)]
		if op != nil && op.node == rs.peer.node && op.port == rs.port && (op.pri == rs.pri || rs.pri == replyPri) &&
			raddr&offMask == 0 && msgLen == uint32(len(op.buf)) && !op.done {
			x.op, x.dst = op, op.buf
		}
	}
	slot := rd.allocRx()
	rd.rx[slot] = x
	m := &rs.msgs[(rs.mHead+rs.mLen)%rxMsgs]
	rs.mLen++
	*m = rxMsg{slot: slot, start: startSeq, nseg: nseg, segLen: segLen, msgLen: msgLen, size: 0xFF, fastLen: -1, kind: typ}
	return m
}

// rdmaDeliver completes a received transfer (deliver's hook): a PUT is
// done (no event, as in GM), a GET's reply is queued, a GOT completes its
// get.
func (e *Engine) rdmaDeliver(rs *rxStream, m *rxMsg) {
	rd := e.rdma
	x := &rd.rx[m.slot]
	switch m.kind {
	case wire.TypeGet:
		s := e.tx(rs.peer, rs.port, x.rpri)
		if s.qLen >= qCap {
			e.freeGot(x.got) // cannot happen (checked on arrival)
			break
		}
		rd.gotStream[x.got-rd.gotBase] = s
		e.enqueue(e.lastNow, s, x.got, false)
	case wire.TypeGot:
		if op := x.op; op != nil && !op.dead {
			op.done = true
			if op.acked {
				rd.dropGet(op)
				e.complete(op.rec, StatusSuccess)
			}
		}
	}
	rd.freeRx(m.slot)
	m.kind = 0
}

// rdmaAbandon drops a transfer being received (abandon's hook).
func (e *Engine) rdmaAbandon(m *rxMsg) {
	rd := e.rdma
	if x := &rd.rx[m.slot]; m.kind == wire.TypeGet && x.got >= 0 {
		e.freeGot(x.got)
	}
	rd.freeRx(m.slot)
	m.kind = 0
}

// rdmaDump describes the RDMA state for Dump.
func (e *Engine) rdmaDump(b *strings.Builder, now Time) {
	rd := e.rdma
	if rd == nil {
		return
	}
	free := 0
	for i := rd.gotFree; i >= 0; i = e.recs[i].next {
		free++
	}
	fmt.Fprintf(b, "  rdma: remote access %v, regions %d, gets %d, reply slots %d/%d free, streams to resume %d\n",
		rd.allowed, len(rd.regions), len(rd.gets), free, ReplySlots, len(rd.resume))
	for _, op := range rd.gets {
		fmt.Fprintf(b, "    get %d -> node %d port %d pri %d: len %d acked %v done %v since %v\n",
			op.id, op.node, op.port, op.pri, len(op.buf), op.acked, op.done, time.Duration(op.since-now))
	}
}
