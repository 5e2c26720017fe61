package token

import "errors"

// Errors returned by Pools.
var (
	// ErrNoReceiveToken means a buffer was provided while every receive
	// token was in use: the port already holds as many provided buffers
	// (plus buffers being filled) as it has receive tokens. Handle a receive
	// event, which gives a token back, before providing more.
	ErrNoReceiveToken = errors.New("token: no free receive token (more buffers provided than receive tokens)")
	// ErrBadSize means a size class outside 0..31.
	ErrBadSize = errors.New("token: size class out of range 0..31")
	// ErrBadPriority means a priority other than 0 (low) or 1 (high).
	ErrBadPriority = errors.New("token: priority out of range 0..1")
)

// Buffer is one provided receive buffer with its matching key.
type Buffer struct {
	// Buf is the memory the client provided. A message is copied into
	// Buf[:length]; Buf may be shorter than MaxLengthForSize(Size).
	Buf []byte
	// Size is the size class the buffer matches.
	Size uint8
	// Priority is the priority the buffer matches (0 low, 1 high).
	Priority uint8
	// Tag is the client's opaque tag, returned in the receive event.
	Tag uint8
}

const noSlot = -1

type slot struct {
	buf  Buffer
	next int32
}

type list struct {
	head, tail int32
	n          int32
}

// Pools holds a port's provided receive buffers in FIFO lists per
// (priority, size) and accounts for the receive tokens they use. A buffer
// keeps its token from Provide until Release, including while a message is
// being reassembled into it. All state is preallocated by NewPools; no method
// allocates. Pools is not safe for concurrent use.
type Pools struct {
	slots    []slot
	freeHead int32
	lists    [NumPriorities][NumSizes]list
	accept   [NumPriorities]uint64
	tokens   Counter
}

// NewPools returns pools with n receive tokens and every size acceptable at
// both priorities.
func NewPools(n int) *Pools {
	p := &Pools{slots: make([]slot, n), tokens: NewCounter(n)}
	for i := range p.slots {
		p.slots[i].next = int32(i + 1)
	}
	if n > 0 {
		p.slots[n-1].next = noSlot
		p.freeHead = 0
	} else {
		p.freeHead = noSlot
	}
	for pri := range p.lists {
		p.accept[pri] = ^uint64(0)
		for s := range p.lists[pri] {
			p.lists[pri][s] = list{head: noSlot, tail: noSlot}
		}
	}
	return p
}

// Tokens returns the receive-token counter (Total is the port's
// gm_num_receive_tokens).
func (p *Pools) Tokens() *Counter { return &p.tokens }

// Provide appends b to the tail of the (b.Priority, b.Size) list and takes
// one receive token. It fails with ErrNoReceiveToken when none is left, and
// with ErrBadSize or ErrBadPriority for an impossible key.
func (p *Pools) Provide(b Buffer) error {
	if b.Size >= NumSizes {
		return ErrBadSize
	}
	if b.Priority >= NumPriorities {
		return ErrBadPriority
	}
	if p.freeHead == noSlot || !p.tokens.TryAcquire() {
		return ErrNoReceiveToken
	}
	i := p.freeHead
	p.freeHead = p.slots[i].next
	p.slots[i] = slot{buf: b, next: noSlot}
	l := &p.lists[b.Priority][b.Size]
	if l.tail == noSlot {
		l.head = i
	} else {
		p.slots[l.tail].next = i
	}
	l.tail = i
	l.n++
	return nil
}

// Take removes the oldest buffer of (pri, size) and returns its slot
// number, or -1 and false if that list is empty. The buffer keeps its
// receive token; finish with Release (message delivered) or Return (message
// abandoned).
func (p *Pools) Take(pri, size uint8) (int, bool) {
	if pri >= NumPriorities || size >= NumSizes {
		return noSlot, false
	}
	l := &p.lists[pri][size]
	i := l.head
	if i == noSlot {
		return noSlot, false
	}
	l.head = p.slots[i].next
	if l.head == noSlot {
		l.tail = noSlot
	}
	l.n--
	p.slots[i].next = noSlot
	return int(i), true
}

// Buffer returns the buffer held in slot i (from Take).
func (p *Pools) Buffer(i int) *Buffer { return &p.slots[i].buf }

// Return puts the buffer of slot i back at the head of its list, so it is
// the next one taken, as if it had never been taken.
func (p *Pools) Return(i int) {
	b := &p.slots[i].buf
	l := &p.lists[b.Priority][b.Size]
	p.slots[i].next = l.head
	l.head = int32(i)
	if l.tail == noSlot {
		l.tail = int32(i)
	}
	l.n++
}

// Release frees slot i and its receive token: the buffer now belongs to the
// client again. It returns the buffer.
func (p *Pools) Release(i int) Buffer {
	b := p.slots[i].buf
	p.slots[i] = slot{next: p.freeHead}
	p.freeHead = int32(i)
	p.tokens.Release()
	return b
}

// Len returns how many buffers of (pri, size) are waiting.
func (p *Pools) Len(pri, size uint8) int {
	if pri >= NumPriorities || size >= NumSizes {
		return 0
	}
	return int(p.lists[pri][size].n)
}

// SetAcceptable sets the acceptable-size mask of priority pri
// (gm_set_acceptable_sizes): bit s set means size class s is accepted.
func (p *Pools) SetAcceptable(pri uint8, mask uint64) error {
	if pri >= NumPriorities {
		return ErrBadPriority
	}
	p.accept[pri] = mask
	return nil
}

// Acceptable reports whether size class size is acceptable at priority pri.
func (p *Pools) Acceptable(pri, size uint8) bool {
	return pri < NumPriorities && size < 64 && p.accept[pri]&(1<<size) != 0
}
