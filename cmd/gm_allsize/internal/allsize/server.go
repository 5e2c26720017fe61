package allsize

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/cmd/gm_allsize/internal/pattern"
	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
	"github.com/ethergm/ethergm/gm"
)

// bwSlack is how many receive buffers beyond twice the client's
// in-flight depth the server provides for a bandwidth measurement (within
// 2*WindowBytes): a buffer goes back to the port only when the server
// handles its event, which can be long after the sender got the ack and
// sent the next message, if the server was not scheduled meanwhile.
const bwSlack = 8

// bwBuffers returns the receive buffers the server keeps provided for a
// bandwidth measurement of depth messages of length bytes.
func bwBuffers(depth, length int) int {
	return max(depth+1, min(2*depth+bwSlack, 2*WindowBytes/max(length, 1)))
}

// Server answers one client session on an open port: it echoes the
// latency measurements, sinks the bandwidth measurements, checks payloads
// when the client asked for --verify, and reports what it saw in its
// control messages. Set the fields, then call Session, from one goroutine.
type Server struct {
	// Port is the server's open port.
	Port *gm.Port
	// Out receives the session log and the mismatch lines; nil discards
	// them.
	Out io.Writer
	// Timeout bounds the waits for the client once a session started.
	Timeout time.Duration
	// Stop, if not nil, ends Session (with ErrInterrupted) when set.
	Stop *atomic.Bool
}

// SessionResult describes one served session.
type SessionResult struct {
	// Client is the client's host name; Node and Port its address.
	Client string
	Node   gm.NodeID
	Port   int
	// Verify tells whether the client asked for verification.
	Verify bool
	// Measurements is the number of measurements served.
	Measurements int
	// Messages counts the data messages received.
	Messages int64
	// DataErrors counts the corrupted messages this side saw.
	DataErrors int64
	// Counters are this port's counter deltas over the session.
	Counters report.Counters
}

func (s *Server) logf(format string, args ...any) {
	if s.Out != nil {
		fmt.Fprintf(s.Out, format+"\n", args...)
	}
}

// Session waits (until Stop) for a client's hello and serves that client
// until its bye. It returns an error if the session ended otherwise (the
// client vanished, aborted, or a send failed); the port may then hold
// buffers and disabled streams of the broken session, so the caller
// should close it and open it again before the next session.
func (s *Server) Session() (SessionResult, error) {
	var res SessionResult
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c, err := newConn(s.Port, timeout, s.Stop)
	if err != nil {
		return res, err
	}
	defer c.close()
	var hello ctlMsg
	c.period = idleWatchdog
	for {
		hello, err = c.waitCtl("", true)
		if err != nil {
			return res, err
		}
		if hello.Type == ctlHello {
			break
		}
		// A late message of an earlier session: refuse it.
		s.logf("refused %s from node %d port %d: no session", hello.Type, hello.node, hello.port)
		if hello.Type != ctlAbort {
			_ = c.sendCtlTo(hello.node, hello.port, &ctlMsg{Type: ctlAbort, Reason: "no session: send hello first"})
		}
	}
	c.period = watchdog
	c.peer, c.peerPort = hello.node, hello.port
	res.Client, res.Node, res.Port, res.Verify = hello.Host, hello.node, hello.port, hello.Verify
	if hello.Version != ProtocolVersion {
		_ = c.sendCtl(&ctlMsg{Type: ctlAbort, Reason: fmt.Sprintf("protocol version %d, server speaks %d", hello.Version, ProtocolVersion)})
		_ = c.drain()
		return res, fmt.Errorf("%w: client protocol version %d", ErrProtocol, hello.Version)
	}
	before := Counters(s.Port)
	s.logf("session: client %s (node %d port %d), %d points, verify %v", hello.Host, hello.node, hello.port, hello.Points, hello.Verify)
	v := &verifier{out: s.Out}
	if err := c.sendCtl(&ctlMsg{Type: ctlWelcome, Host: s.Port.HostName()}); err != nil {
		return res, err
	}
	// Other clients are refused (one run at a time), by dispatch.
	c.busy = fmt.Sprintf("server busy with a run from %s (node %d port %d)", hello.Host, hello.node, hello.port)
	for {
		m, err := c.waitCtl("", false)
		if c.refused > 0 {
			s.logf("refused %d control messages from other clients: busy", c.refused)
			c.refused = 0
		}
		if err == nil {
			switch m.Type {
			case ctlBegin:
				var n int
				n, err = s.measure(c, v, m, hello.Verify)
				res.Measurements++
				res.Messages += int64(n)
				res.DataErrors += int64(v.errors)
			case ctlBye:
				res.Counters = Counters(s.Port).Sub(before)
				if err := c.sendCtl(&ctlMsg{Type: ctlByeAck, Counters: &res.Counters}); err != nil {
					return res, err
				}
				s.logf("session end: %d measurements, %d messages received, %d corrupted; counters: %v",
					res.Measurements, res.Messages, res.DataErrors, res.Counters)
				return res, c.drain()
			default:
				err = fmt.Errorf("%w: unexpected %q message", ErrProtocol, m.Type)
			}
		}
		if err != nil {
			res.Counters = Counters(s.Port).Sub(before)
			if !errors.Is(err, ErrAborted) && !errors.Is(err, ErrInterrupted) {
				c.dropAll()
				if c.sendCtl(&ctlMsg{Type: ctlAbort, Reason: "server: " + err.Error()}) == nil {
					c.timeout = min(c.timeout, 2*time.Second)
					_ = c.drain()
				}
			}
			s.logf("session aborted: %v", err)
			return res, err
		}
	}
}

// measure serves one measurement described by the begin message m and
// returns the number of messages received.
func (s *Server) measure(c *conn, v *verifier, m ctlMsg, verify bool) (int, error) {
	if m.Size < MinSize || m.Size > MaxSize || m.Length < 0 || m.Length > gm.MaxLengthForSize(m.Size) ||
		m.Prio > uint8(gm.HighPriority) || m.Count < 1 || m.Depth < 1 {
		return 0, fmt.Errorf("%w: bad begin %+v", ErrProtocol, m)
	}
	v.begin()
	pri := gm.Priority(m.Prio)
	target := 2
	if m.Mode == modeBandwidth {
		target = bwBuffers(m.Depth, m.Length)
	}
	rx, err := c.newRx(m.Size, pri, m.Length, m.Count, target)
	if err != nil {
		return 0, err
	}
	pending := 0
	c.onData = func(e *gm.Event) {
		if verify {
			v.check(e, pattern.Key{Size: m.Size, Length: m.Length, Seq: uint64(rx.received), Dir: pattern.Request}, pri)
		}
		rx.got(e)
		pending++
	}
	defer func() { c.onData = nil }()
	if err := c.sendCtl(&ctlMsg{Type: ctlReady}); err != nil {
		return 0, err
	}
	switch m.Mode {
	case modePingPong:
		slots := sendSlots(2, m.Length, verify, pattern.Key{Size: m.Size, Length: m.Length, Dir: pattern.Echo})
		next, echoed := 0, 0
		deadline := c.deadline()
		for echoed < m.Count {
			if pending > 0 {
				sl, err := c.freeSlot(slots, &next)
				if err != nil {
					return rx.received, err
				}
				if verify {
					pattern.Fill(sl.buf[:m.Length], pattern.Key{Size: m.Size, Length: m.Length, Seq: uint64(echoed), Dir: pattern.Echo})
				}
				if err := c.send(sl, m.Size, m.Length, pri); err != nil {
					return rx.received, err
				}
				echoed++
				pending--
				deadline = c.deadline()
				continue
			}
			if c.poll() {
				deadline = c.deadline()
			}
			if err := c.check(deadline); err != nil {
				return rx.received, fmt.Errorf("round trip %d: %w", echoed, err)
			}
		}
	case modeBandwidth:
		deadline := c.deadline()
		for rx.received < m.Count {
			if c.poll() {
				deadline = c.deadline()
			}
			if err := c.check(deadline); err != nil {
				return rx.received, fmt.Errorf("after %d of %d messages: %w", rx.received, m.Count, err)
			}
		}
	default:
		return 0, fmt.Errorf("%w: unknown mode %q", ErrProtocol, m.Mode)
	}
	c.onData = nil
	done := &ctlMsg{Type: ctlDone, Received: rx.received, Errors: v.errors, BytesWrong: v.bytesWrong, Mismatches: v.lines}
	if err := c.sendCtl(done); err != nil {
		return rx.received, err
	}
	return rx.received, c.drain()
}
