package relay

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mdlayher/packet"
)

// Defaults for [Config].
const (
	DefaultQueueLen    = 4096
	DefaultHoldTimeout = 10 * time.Millisecond
)

// maxFrame is the read buffer size: the largest frame a packet socket can
// return (GRO and GSO packets included).
const maxFrame = 65536 + 256

// Config configures a [Relay].
type Config struct {
	// Seed seeds the pseudo-random choices (one math/rand/v2 PCG stream per
	// direction), so a run's choices depend only on the seed and the order
	// of the frames.
	Seed int64
	// AtoB and BtoA are the impairments of each direction.
	AtoB, BtoA Impairment
	// Ports, if not nil, gives the impairment of the frames read on each
	// port of a relay started by [StartN] (one per port), in place of AtoB
	// and BtoA.
	Ports []Impairment
	// EtherType, if not zero, restricts impairment to frames of that
	// EtherType (0x88B5 for EtherGM); other frames (ARP, IP) are forwarded
	// untouched. Zero impairs every frame.
	EtherType uint16
	// QueueLen bounds the frames waiting for their delay per direction;
	// frames beyond it are counted in Stats.Overflows and discarded. 0
	// means DefaultQueueLen.
	QueueLen int
	// HoldTimeout bounds how long reordered frames wait for the frames
	// that should overtake them: when the first of them has waited this
	// long, all are released. 0 means DefaultHoldTimeout.
	HoldTimeout time.Duration
}

// Conn is the side of a relay that reads and writes whole Ethernet frames;
// *packet.Conn from [Listen] implements it. WriteTo gets a *packet.Addr
// holding the frame's destination MAC address.
type Conn interface {
	ReadFrom(b []byte) (int, net.Addr, error)
	WriteTo(b []byte, addr net.Addr) (int, error)
	SetReadDeadline(t time.Time) error
	Close() error
}

// Relay forwards every frame read on side A to side B and vice versa,
// impairing each direction as configured. A relay of more than two ports
// ([StartN]) is a learning switch: it forwards a frame to the port where
// its destination MAC address was last seen as a source, and floods
// broadcasts and frames to unknown addresses to every other port. It is
// safe for concurrent use.
type Relay struct {
	cfg     Config
	conns   []Conn
	pipes   []*pipe
	closing atomic.Bool
	wg      sync.WaitGroup
	once    sync.Once
	err     error

	fdbMu sync.RWMutex
	fdb   map[[6]byte]int // source MAC -> port it was seen on (more than two ports)
}

// pipe is one direction (the frames read on one port): a reader goroutine
// and a delay-queue goroutine.
type pipe struct {
	r   *Relay
	dir Direction
	in  Conn

	mu  sync.Mutex // guards imp
	imp *Impairer

	qmu   sync.Mutex // guards q and seq
	q     delayQueue
	seq   uint64
	wake  chan struct{} // a new head of q, buffered 1
	done  chan struct{} // closed on Close
	limit int

	overflows, errors atomic.Uint64
}

// Start starts a relay between a and b, taking ownership of both (Close
// closes them).
func Start(a, b Conn, cfg Config) (*Relay, error) {
	return StartN([]Conn{a, b}, cfg)
}

// StartN starts a relay among two or more ports, taking ownership of them
// (Close closes them). The frames read on port i are impaired by
// cfg.Ports[i] (or, without Ports, AtoB for port 0 and BtoA for port 1 and
// none for the others) and counted in Stats(From(i)).
func StartN(conns []Conn, cfg Config) (*Relay, error) {
	if len(conns) < 2 {
		return nil, fmt.Errorf("relay: %d ports, need at least 2", len(conns))
	}
	imps := cfg.Ports
	if imps == nil {
		imps = make([]Impairment, len(conns))
		imps[0], imps[1] = cfg.AtoB, cfg.BtoA
	}
	if len(imps) != len(conns) {
		return nil, fmt.Errorf("relay: %d impairments for %d ports", len(imps), len(conns))
	}
	for d, imp := range imps {
		if err := imp.Validate(); err != nil {
			return nil, fmt.Errorf("%v: %w", Direction(d), err)
		}
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	if cfg.HoldTimeout <= 0 {
		cfg.HoldTimeout = DefaultHoldTimeout
	}
	r := &Relay{cfg: cfg, conns: conns, pipes: make([]*pipe, len(conns)), fdb: map[[6]byte]int{}}
	for d, imp := range imps {
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(d)+1))
		r.pipes[d] = &pipe{
			r: r, dir: Direction(d), in: r.conns[d],
			imp:   NewImpairer(imp, rng, cfg.EtherType),
			wake:  make(chan struct{}, 1),
			done:  make(chan struct{}),
			limit: cfg.QueueLen,
		}
	}
	for _, p := range r.pipes {
		r.wg.Add(2)
		go p.readLoop()
		go p.delayLoop()
	}
	return r, nil
}

// Ports returns the number of ports.
func (r *Relay) Ports() int { return len(r.conns) }

// SetImpairment changes the impairment of direction d for the frames that
// follow.
func (r *Relay) SetImpairment(d Direction, imp Impairment) error {
	if err := imp.Validate(); err != nil {
		return err
	}
	p := r.pipes[d]
	p.mu.Lock()
	p.imp.SetImpairment(imp)
	p.mu.Unlock()
	return nil
}

// Impairment returns the current impairment of direction d.
func (r *Relay) Impairment(d Direction) Impairment {
	p := r.pipes[d]
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.imp.Impairment()
}

// Stats returns the counters of direction d.
func (r *Relay) Stats(d Direction) Stats {
	p := r.pipes[d]
	p.mu.Lock()
	s := p.imp.Stats()
	p.mu.Unlock()
	s.Overflows = p.overflows.Load()
	s.Errors = p.errors.Load()
	return s
}

// Close stops the relay and closes both sides; frames still waiting for
// their delay are discarded. It is idempotent.
func (r *Relay) Close() error {
	r.once.Do(func() {
		r.closing.Store(true)
		for _, p := range r.pipes {
			close(p.done)
		}
		var errs []error
		for _, c := range r.conns {
			errs = append(errs, c.Close())
		}
		r.err = errors.Join(errs...)
		r.wg.Wait()
	})
	return r.err
}

// readLoop reads frames from p.in, impairs them and sends them on.
func (p *pipe) readLoop() {
	defer p.r.wg.Done()
	buf := make([]byte, maxFrame)
	var outs []Output
	var deadlineSet bool
	for {
		p.mu.Lock()
		held := p.imp.Held() > 0
		p.mu.Unlock()
		switch {
		case held && !deadlineSet:
			p.in.SetReadDeadline(time.Now().Add(p.r.cfg.HoldTimeout))
			deadlineSet = true
		case !held && deadlineSet:
			p.in.SetReadDeadline(time.Time{})
			deadlineSet = false
		}
		n, _, err := p.in.ReadFrom(buf)
		if err != nil {
			if p.r.closing.Load() {
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				p.mu.Lock()
				outs = p.imp.Flush(outs[:0])
				p.mu.Unlock()
				p.sendAll(outs)
				deadlineSet = false
				p.in.SetReadDeadline(time.Time{})
				continue
			}
			p.errors.Add(1)
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		frame := make([]byte, n)
		copy(frame, buf[:n])
		p.r.learn(frame, int(p.dir))
		p.mu.Lock()
		outs = p.imp.Process(frame, outs[:0])
		p.mu.Unlock()
		p.sendAll(outs)
	}
}

// sendAll writes the undelayed frames of outs (when nothing is queued) and
// queues the others.
func (p *pipe) sendAll(outs []Output) {
	for i := range outs {
		o := outs[i]
		outs[i] = Output{}
		if o.Delay <= 0 {
			p.qmu.Lock()
			empty := p.q.Len() == 0
			p.qmu.Unlock()
			if empty {
				p.write(o.Frame)
				continue
			}
		}
		p.enqueue(o)
	}
}

// learn records that frame's source MAC address is on port in (relays of
// more than two ports only).
func (r *Relay) learn(frame []byte, in int) {
	if len(r.conns) == 2 || len(frame) < 14 || frame[6]&1 != 0 {
		return
	}
	src := [6]byte(frame[6:12])
	r.fdbMu.RLock()
	at, ok := r.fdb[src]
	r.fdbMu.RUnlock()
	if !ok || at != in {
		r.fdbMu.Lock()
		r.fdb[src] = in
		r.fdbMu.Unlock()
	}
}

// write sends one frame read on p.in to the port of its destination (the
// other port of a two-port relay; else the learned one, or every other
// port for a broadcast or an unknown destination).
func (p *pipe) write(frame []byte) {
	if len(frame) < 14 {
		p.errors.Add(1)
		return
	}
	r, in := p.r, int(p.dir)
	if len(r.conns) == 2 {
		p.writeTo(r.conns[1-in], frame)
		return
	}
	if frame[0]&1 == 0 {
		r.fdbMu.RLock()
		out, ok := r.fdb[[6]byte(frame[:6])]
		r.fdbMu.RUnlock()
		if ok {
			if out != in {
				p.writeTo(r.conns[out], frame)
			}
			return
		}
	}
	for i, c := range r.conns {
		if i != in {
			p.writeTo(c, frame)
		}
	}
}

// writeTo writes frame on c.
func (p *pipe) writeTo(c Conn, frame []byte) {
	if _, err := c.WriteTo(frame, &packet.Addr{HardwareAddr: net.HardwareAddr(frame[:6])}); err != nil {
		if !p.r.closing.Load() {
			p.errors.Add(1)
		}
	}
}

// enqueue puts o on the delay queue, or counts an overflow.
func (p *pipe) enqueue(o Output) {
	at := time.Now().Add(o.Delay)
	p.qmu.Lock()
	if p.q.Len() >= p.limit {
		p.qmu.Unlock()
		p.overflows.Add(1)
		return
	}
	p.seq++
	heap.Push(&p.q, delayed{at: at, seq: p.seq, frame: o.Frame})
	head := p.q[0].seq == p.seq
	p.qmu.Unlock()
	if head {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// delayLoop writes queued frames when their time comes.
func (p *pipe) delayLoop() {
	defer p.r.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		var wait time.Duration = time.Hour
		for {
			p.qmu.Lock()
			if p.q.Len() == 0 {
				p.qmu.Unlock()
				break
			}
			if d := time.Until(p.q[0].at); d > 0 {
				wait = d
				p.qmu.Unlock()
				break
			}
			f := heap.Pop(&p.q).(delayed)
			p.qmu.Unlock()
			p.write(f.frame)
		}
		t.Reset(wait)
		select {
		case <-p.done:
			return
		case <-p.wake:
		case <-t.C:
		}
	}
}

// delayed is a frame waiting on the delay queue.
type delayed struct {
	at    time.Time
	seq   uint64
	frame []byte
}

// delayQueue is a min-heap of frames by departure time, then arrival.
type delayQueue []delayed

func (q delayQueue) Len() int { return len(q) }
func (q delayQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q delayQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *delayQueue) Push(x any)   { *q = append(*q, x.(delayed)) }
func (q *delayQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = delayed{}
	*q = old[:len(old)-1]
	return x
}
