package allsize

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/membuf"
)

// Errors that end a run or a session.
var (
	// ErrTimeout means the peer did not answer within Options.Timeout.
	ErrTimeout = errors.New("timed out waiting for the peer")
	// ErrInterrupted means the run was stopped (a signal).
	ErrInterrupted = errors.New("interrupted")
	// ErrSendFailed means a send completed with an error status.
	ErrSendFailed = errors.New("send failed")
	// ErrProtocol means an unexpected control message.
	ErrProtocol = errors.New("protocol error")
	// ErrAborted means the peer gave up and said why.
	ErrAborted = errors.New("peer aborted")
)

// Periods of the alarm that makes BlockingReceive return so that waits
// can check their deadlines and the stop flag: watchdog during a run,
// idleWatchdog while a server waits for a client (each wake-up costs a
// millisecond of BlockingReceive spinning).
const (
	watchdog     = 50 * time.Millisecond
	idleWatchdog = 250 * time.Millisecond
)

// ctlBuffers is the number of control receive buffers each side keeps
// provided; at most two control messages are ever in flight to a side.
const ctlBuffers = 4

// slot is a send buffer; it is busy from the send until its callback.
type slot struct {
	buf  []byte
	busy bool
	// foreign marks a send to a port other than the peer's (a refusal):
	// its failure does not concern the session.
	foreign bool
}

// conn drives one GM port from one goroutine: it polls events, runs send
// callbacks through Unknown, parses control messages and hands data
// messages to onData. Nothing in it is safe for concurrent use.
type conn struct {
	p        *gm.Port
	peer     gm.NodeID
	peerPort int
	timeout  time.Duration
	stop     *atomic.Bool

	onData func(e *gm.Event) // receives data (non-control) messages from the peer
	stray  int               // data messages that arrived with no onData or from another sender

	ctlIn    []ctlMsg
	ctlErr   error // first corrupted control message
	closed   bool  // the port was closed (PortClosedEvent)
	ctlSlots []*slot

	// busy, if not empty, is the reason given to other ports that send
	// control messages: dispatch answers them at once with an abort (from
	// refuseSlot) instead of queueing them.
	busy       string
	refuseSlot *slot
	refused    int

	inflight int       // sends not yet completed
	failures int       // sends completed with an error
	lastFail gm.Status // status of the latest failure
	sentCB   gm.SendCallback

	alarm   gm.Alarm
	alarmCB func(any)
	period  time.Duration // of the watchdog alarm
}

func newConn(p *gm.Port, timeout time.Duration, stop *atomic.Bool) (*conn, error) {
	if stop == nil {
		stop = new(atomic.Bool)
	}
	c := &conn{p: p, timeout: timeout, stop: stop, period: watchdog}
	c.sentCB = c.sent
	c.alarmCB = func(any) { c.p.SetAlarm(&c.alarm, uint64(c.period/time.Microsecond), c.alarmCB, nil) }
	for range ctlBuffers {
		if err := p.ProvideReceiveBuffer(make([]byte, ctlBufLen), CtlSize, gm.LowPriority, 0); err != nil {
			return nil, fmt.Errorf("provide control buffer: %w", err)
		}
	}
	for range 2 {
		c.ctlSlots = append(c.ctlSlots, &slot{buf: make([]byte, ctlBufLen)})
	}
	c.refuseSlot = &slot{buf: make([]byte, ctlBufLen)}
	p.SetAlarm(&c.alarm, uint64(watchdog/time.Microsecond), c.alarmCB, nil)
	return c, nil
}

// close cancels the watchdog alarm.
func (c *conn) close() { c.p.CancelAlarm(&c.alarm) }

// sent is the send callback of every send.
func (c *conn) sent(_ *gm.Port, ctx any, st gm.Status) {
	foreign := false
	if s, ok := ctx.(*slot); ok {
		s.busy = false
		foreign, s.foreign = s.foreign, false
	}
	c.inflight--
	if st != gm.Success && st != gm.SendDropped && !foreign {
		c.failures++
		c.lastFail = st
	}
}

// poll waits for one event (BlockingReceive spins about a millisecond,
// then sleeps; the watchdog alarm bounds the sleep) and handles it. It
// reports whether the event came from the network (anything but the
// watchdog alarm), which waits take as progress.
func (c *conn) poll() bool {
	return c.dispatch(c.p.BlockingReceive())
}

func (c *conn) dispatch(e *gm.Event) bool {
	switch {
	case e.Type == gm.NoRecvEvent:
		return false
	case e.Type == gm.PortClosedEvent:
		c.closed = true
		return false
	case e.Type == gm.AlarmEvent:
		c.p.Unknown(e)
		return false
	case e.Type.IsRecv() && e.Size == CtlSize:
		m, err := decodeCtl(e.Message[:e.Length])
		if err != nil && c.ctlErr == nil {
			c.ctlErr = err
		}
		if err == nil {
			m.node, m.port = e.SenderNode, e.SenderPort
			if c.busy != "" && (m.node != c.peer || m.port != c.peerPort) {
				c.refuse(m)
			} else {
				c.ctlIn = append(c.ctlIn, m)
			}
		}
		_ = c.p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	case e.Type.IsRecv():
		if c.onData != nil && e.SenderNode == c.peer && e.SenderPort == c.peerPort {
			c.onData(e)
		} else {
			c.stray++
			_ = c.p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
		}
	default:
		c.p.Unknown(e)
	}
	return true
}

// check returns the error that must end the current wait, if any: a
// failed send, a corrupted control message, an abort from the peer, a
// stop, or the deadline.
func (c *conn) check(deadline time.Time) error {
	if c.closed {
		return fmt.Errorf("%w: the port was closed", gm.Failure)
	}
	for _, m := range c.ctlIn {
		if m.Type == ctlAbort && m.node == c.peer && m.port == c.peerPort {
			return fmt.Errorf("%w: %s", ErrAborted, m.Reason)
		}
	}
	switch {
	case c.failures > 0:
		return fmt.Errorf("%w: %v", ErrSendFailed, c.lastFail)
	case c.ctlErr != nil:
		return c.ctlErr
	case c.stop.Load():
		return ErrInterrupted
	case !deadline.IsZero() && time.Now().After(deadline):
		return ErrTimeout
	}
	return nil
}

// deadline returns the deadline of a wait that starts now.
func (c *conn) deadline() time.Time { return time.Now().Add(c.timeout) }

// send sends s.buf[:length] to the peer, handling events while every send
// token is in use.
func (c *conn) send(s *slot, size uint8, length int, pri gm.Priority) error {
	deadline := c.deadline()
	for {
		err := c.p.SendWithCallback(s.buf, size, length, pri, c.peer, c.peerPort, c.sentCB, s)
		if err == nil {
			s.busy = true
			c.inflight++
			return nil
		}
		if !errors.Is(err, gm.ErrNoSendToken) {
			return err
		}
		if c.poll() {
			deadline = c.deadline()
		}
		if err := c.check(deadline); err != nil {
			return err
		}
	}
}

// trySend is send without waiting: it reports false when no send token is
// free.
func (c *conn) trySend(s *slot, size uint8, length int, pri gm.Priority) (bool, error) {
	err := c.p.SendWithCallback(s.buf, size, length, pri, c.peer, c.peerPort, c.sentCB, s)
	switch {
	case err == nil:
		s.busy = true
		c.inflight++
		return true, nil
	case errors.Is(err, gm.ErrNoSendToken):
		return false, nil
	}
	return false, err
}

// freeSlot returns a slot of slots that is not busy, handling events until
// one is.
func (c *conn) freeSlot(slots []*slot, next *int) (*slot, error) {
	deadline := c.deadline()
	for {
		for range slots {
			s := slots[*next%len(slots)]
			*next++
			if !s.busy {
				return s, nil
			}
		}
		if c.poll() {
			deadline = c.deadline()
		}
		if err := c.check(deadline); err != nil {
			return nil, err
		}
	}
}

// refuse answers a control message from a port other than the peer's with
// an abort carrying c.busy, without waiting: if the refusal buffer or a
// send token is not free, the other side just times out.
func (c *conn) refuse(m ctlMsg) {
	c.refused++
	if m.Type == ctlAbort || c.refuseSlot.busy {
		return
	}
	n, err := (&ctlMsg{Type: ctlAbort, Reason: c.busy}).encode(c.refuseSlot.buf)
	if err != nil {
		return
	}
	c.refuseSlot.foreign = true
	if c.p.SendWithCallback(c.refuseSlot.buf, CtlSize, n, gm.LowPriority, m.node, m.port, c.sentCB, c.refuseSlot) == nil {
		c.refuseSlot.busy = true
		c.inflight++
	} else {
		c.refuseSlot.foreign = false
	}
}

// sendCtlTo sends a control message to a port other than the peer's (a
// refusal); whether it arrives does not matter to the session.
func (c *conn) sendCtlTo(node gm.NodeID, port int, m *ctlMsg) error {
	peer, peerPort := c.peer, c.peerPort
	c.peer, c.peerPort = node, port
	defer func() { c.peer, c.peerPort = peer, peerPort }()
	return c.sendCtlSlot(m, true)
}

// sendCtl sends a control message to the peer.
func (c *conn) sendCtl(m *ctlMsg) error { return c.sendCtlSlot(m, false) }

func (c *conn) sendCtlSlot(m *ctlMsg, foreign bool) error {
	var next int
	s, err := c.freeSlot(c.ctlSlots, &next)
	if err != nil {
		return err
	}
	n, err := m.encode(s.buf)
	if err != nil {
		return err
	}
	s.foreign = foreign
	if err := c.send(s, CtlSize, n, gm.LowPriority); err != nil {
		s.foreign = false
		return err
	}
	return nil
}

// waitCtl returns the next control message, handling events until one
// arrives. With forever it waits until stopped, else until nothing
// happened for the timeout. An abort from the peer is returned as an error
// wrapping ErrAborted; any type other than want (if want is not empty) as
// ErrProtocol. Messages from other ports are returned like any other
// (their node and port tell them apart).
func (c *conn) waitCtl(want string, forever bool) (ctlMsg, error) {
	var deadline time.Time
	if !forever {
		deadline = c.deadline()
	}
	for len(c.ctlIn) == 0 {
		if err := c.check(deadline); err != nil {
			if errors.Is(err, ErrTimeout) && want != "" {
				return ctlMsg{}, fmt.Errorf("%w (no %q message)", err, want)
			}
			return ctlMsg{}, err
		}
		if c.poll() && !forever {
			deadline = c.deadline()
		}
	}
	m := c.ctlIn[0]
	c.ctlIn = c.ctlIn[1:]
	switch {
	case m.Type == ctlAbort && m.node == c.peer && m.port == c.peerPort:
		return m, fmt.Errorf("%w: %s", ErrAborted, m.Reason)
	case want != "" && m.Type != want:
		return m, fmt.Errorf("%w: got %q, want %q", ErrProtocol, m.Type, want)
	}
	return m, nil
}

// drain handles events until every send completed, or until nothing
// happened for the timeout.
func (c *conn) drain() error {
	deadline := c.deadline()
	for c.inflight > 0 {
		if err := c.check(deadline); err != nil {
			return err
		}
		if c.poll() {
			deadline = c.deadline()
		}
	}
	return nil
}

// dropAll drops the sends held on the peer's streams after a failure
// (GM disables a stream after an error) and forgets the failures, so that
// an abort message can still be sent. It returns the number of failures.
func (c *conn) dropAll() int {
	n := c.failures
	for _, pri := range []gm.Priority{gm.LowPriority, gm.HighPriority} {
		if c.p.DropSends(pri, c.peer, c.peerPort, c.sentCB, nil) == nil {
			c.inflight++
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for c.inflight > 0 && time.Now().Before(deadline) {
		c.poll()
	}
	c.failures = 0
	return n
}

// rxBuffers keeps receive buffers of one (size, priority) provided for the
// messages of one measurement: at most target at a time and never more than
// the messages still expected, so that none is left provided at the end.
type rxBuffers struct {
	c        *conn
	size     uint8
	pri      gm.Priority
	length   int
	expected int // messages of the measurement
	received int
	provided int // buffers provided and not yet returned
	target   int
}

func (c *conn) newRx(size uint8, pri gm.Priority, length, expected, target int) (*rxBuffers, error) {
	r := &rxBuffers{c: c, size: size, pri: pri, length: length, expected: expected, target: target}
	for r.provided < min(target, expected) {
		if err := c.p.ProvideReceiveBuffer(membuf.Touched(max(length, 1)), size, pri, 0); err != nil {
			return nil, fmt.Errorf("provide buffer size %d: %w", size, err)
		}
		r.provided++
	}
	return r, nil
}

// got accounts for a received message whose event is e and provides its
// buffer again if more messages are expected than buffers are provided.
func (r *rxBuffers) got(e *gm.Event) {
	r.received++
	r.provided--
	if r.provided < min(r.target, r.expected-r.received) {
		if err := r.c.p.ProvideReceiveBuffer(e.Buffer, r.size, r.pri, 0); err == nil {
			r.provided++
		}
	}
}
