package allsize

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/cmd/gm_allsize/internal/pattern"
	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
	"github.com/ethergm/ethergm/gm"
)

// ctlSendReserve is the number of send tokens the client keeps for control
// messages: bandwidth measurements use the others.
const ctlSendReserve = 3

// Client runs the test points of a run against a server (gm_allsize
// --serve, or the second port of a loopback run). Set the fields, then
// call Run once, from one goroutine.
type Client struct {
	// Port is the client's open port.
	Port *gm.Port
	// Server and ServerPort address the server's port.
	Server     gm.NodeID
	ServerPort int
	// Opts are the run's options (see Options.Validate).
	Opts Options
	// Series is the name prefix of the result series ("EtherGM"): points
	// are in series "<Series> low" and "<Series> high".
	Series string
	// Out receives one line per test point and the mismatch lines; nil
	// discards them.
	Out io.Writer
	// Progress, if not nil, is called before each test point with the
	// number of points done and the total.
	Progress func(done, total int, tp TestPoint)
	// Stop, if not nil, ends the run (with ErrInterrupted) when set.
	Stop *atomic.Bool

	// ServerHost is the server's host name, set by Run from its welcome.
	ServerHost string

	c   *conn
	ver verifier
	rtt []time.Duration // round trips of the current latency measurement
}

// Run runs every test point and returns the results and the summary. Run
// never fails as a whole: an error that stops the run early is in
// Summary.Error, with the points done so far. Summary.Local holds this
// port's counter deltas, Summary.Remote the server's.
func (cl *Client) Run() ([]report.Point, report.Summary) {
	start := time.Now()
	var sum report.Summary
	before := Counters(cl.Port)
	points, err := cl.run(&sum)
	if err != nil {
		sum.Error = err.Error()
	}
	if cl.c != nil {
		sum.FailedSends += int64(cl.c.failures)
		cl.c.close()
	}
	sum.Points = len(points)
	sum.Local = Counters(cl.Port).Sub(before)
	sum.Seconds = time.Since(start).Seconds()
	return points, sum
}

func (cl *Client) run(sum *report.Summary) ([]report.Point, error) {
	if err := cl.Opts.Validate(); err != nil {
		return nil, err
	}
	if cl.Series == "" {
		cl.Series = "EtherGM"
	}
	cl.ver = verifier{out: cl.Out}
	c, err := newConn(cl.Port, cl.Opts.Timeout, cl.Stop)
	if err != nil {
		return nil, err
	}
	cl.c = c
	c.peer, c.peerPort = cl.Server, cl.ServerPort
	plan := Plan(cl.Opts, max(1, cl.Port.NumSendTokens()-ctlSendReserve))

	if err := c.sendCtl(&ctlMsg{Type: ctlHello, Version: ProtocolVersion, Host: cl.Port.HostName(), Verify: cl.Opts.Verify, Points: len(plan)}); err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	w, err := c.waitCtl(ctlWelcome, false)
	if err != nil {
		return nil, fmt.Errorf("waiting for the server at node %d port %d: %w", cl.Server, cl.ServerPort, err)
	}
	cl.ServerHost = w.Host

	var out []report.Point
	for i, tp := range plan {
		if cl.Progress != nil {
			cl.Progress(i, len(plan), tp)
		}
		pt, err := cl.point(i, tp, sum)
		if err != nil {
			cl.abort(err, sum)
			return out, fmt.Errorf("size %d len %d prio %s: %w", tp.Size, tp.Length, PriorityName(tp.Priority), err)
		}
		out = append(out, pt)
		if cl.Out != nil {
			fmt.Fprintln(cl.Out, report.Line(pt, cl.Opts.Verify))
		}
	}
	if cl.Progress != nil {
		cl.Progress(len(plan), len(plan), TestPoint{})
	}
	if err := c.sendCtl(&ctlMsg{Type: ctlBye}); err != nil {
		return out, fmt.Errorf("bye: %w", err)
	}
	ack, err := c.waitCtl(ctlByeAck, false)
	if err != nil {
		return out, fmt.Errorf("bye: %w", err)
	}
	sum.Remote = ack.Counters
	return out, c.drain()
}

// abort tells the server the run is over after err, best effort.
func (cl *Client) abort(err error, sum *report.Summary) {
	c := cl.c
	c.onData = nil
	if errors.Is(err, ErrAborted) {
		return
	}
	sum.FailedSends += int64(c.dropAll())
	if c.sendCtl(&ctlMsg{Type: ctlAbort, Reason: err.Error()}) == nil {
		c.timeout = min(c.timeout, 2*time.Second)
		_ = c.drain()
	}
}

// sendSlots returns n send slots for messages of length bytes: with
// verify, n buffers (each message gets its own pattern); without, one
// buffer (filled with a pattern once) shared by all slots, since sends only
// read it.
func sendSlots(n, length int, verify bool, k pattern.Key) []*slot {
	slots := make([]*slot, n)
	var shared []byte
	if !verify {
		shared = make([]byte, max(length, 1))
		pattern.Fill(shared[:length], k)
	}
	for i := range slots {
		if verify {
			slots[i] = &slot{buf: make([]byte, max(length, 1))}
		} else {
			slots[i] = &slot{buf: shared}
		}
	}
	return slots
}

// point runs the latency and bandwidth measurements of tp.
func (cl *Client) point(i int, tp TestPoint, sum *report.Summary) (report.Point, error) {
	pt := report.Point{
		Series: cl.Series + " " + PriorityName(tp.Priority), Size: int(tp.Size), Length: tp.Length,
		Priority: PriorityName(tp.Priority), Iterations: tp.Iterations,
	}
	lat, srv1, err := cl.pingPong(i, tp)
	pt.Errors += cl.ver.errors + srv1.Errors
	sum.DataErrors += int64(cl.ver.errors + srv1.Errors)
	sum.BytesWrong += int64(cl.ver.bytesWrong + srv1.BytesWrong)
	if err != nil {
		return pt, err
	}
	n := int64(2 * (tp.Warmup + tp.Iterations))
	sum.Messages += n
	sum.Bytes += n * int64(tp.Length)
	pt.HalfRTTus = lat.Seconds() * 1e6 / float64(2*tp.Iterations)
	slices.Sort(cl.rtt)
	pt.HalfRTTp50us = medianDuration(cl.rtt).Seconds() * 1e6 / 2

	el, srv2, err := cl.bandwidth(i, tp)
	pt.Errors += cl.ver.errors + srv2.Errors
	sum.DataErrors += int64(cl.ver.errors + srv2.Errors)
	sum.BytesWrong += int64(cl.ver.bytesWrong + srv2.BytesWrong)
	if err != nil {
		return pt, err
	}
	sum.Messages += int64(tp.Iterations)
	sum.Bytes += int64(tp.Iterations) * int64(tp.Length)
	pt.BWMBs = float64(tp.Iterations) * float64(tp.Length) / el.Seconds() / 1e6
	return pt, nil
}

// serverReport prints the mismatch lines of a done message.
func (cl *Client) serverReport(d ctlMsg) {
	if cl.Out == nil {
		return
	}
	for _, l := range d.Mismatches {
		fmt.Fprintln(cl.Out, "server: "+l)
	}
	if d.Errors > len(d.Mismatches) && len(d.Mismatches) > 0 {
		fmt.Fprintf(cl.Out, "server: %d corrupted messages in this measurement (%d bytes)\n", d.Errors, d.BytesWrong)
	}
}

// pingPong measures the round trip: one message in flight, each echoed by
// the server. It returns the time of the timed round trips and the
// server's done message.
func (cl *Client) pingPong(i int, tp TestPoint) (time.Duration, ctlMsg, error) {
	c, v := cl.c, &cl.ver
	v.begin()
	total := tp.Warmup + tp.Iterations
	rx, err := c.newRx(tp.Size, tp.Priority, tp.Length, total, 2)
	if err != nil {
		return 0, ctlMsg{}, err
	}
	verify := cl.Opts.Verify
	c.onData = func(e *gm.Event) {
		if verify {
			v.check(e, pattern.Key{Size: tp.Size, Length: tp.Length, Seq: uint64(rx.received), Dir: pattern.Echo}, tp.Priority)
		}
		rx.got(e)
	}
	defer func() { c.onData = nil }()
	if err := c.sendCtl(&ctlMsg{Type: ctlBegin, Point: i, Mode: modePingPong, Size: tp.Size, Length: tp.Length,
		Prio: uint8(tp.Priority), Count: total, Depth: 2}); err != nil {
		return 0, ctlMsg{}, err
	}
	if _, err := c.waitCtl(ctlReady, false); err != nil {
		return 0, ctlMsg{}, err
	}
	slots := sendSlots(2, tp.Length, verify, pattern.Key{Size: tp.Size, Length: tp.Length})
	next := 0
	cl.rtt = cl.rtt[:0]
	var t0, sentAt time.Time
	for seq := 0; seq < total; seq++ {
		now := time.Now()
		if seq == tp.Warmup {
			t0 = now
		}
		if seq > tp.Warmup {
			cl.rtt = append(cl.rtt, now.Sub(sentAt))
		}
		sentAt = now
		s, err := c.freeSlot(slots, &next)
		if err != nil {
			return 0, ctlMsg{}, err
		}
		if verify {
			pattern.Fill(s.buf[:tp.Length], pattern.Key{Size: tp.Size, Length: tp.Length, Seq: uint64(seq), Dir: pattern.Request})
		}
		if err := c.send(s, tp.Size, tp.Length, tp.Priority); err != nil {
			return 0, ctlMsg{}, err
		}
		deadline := c.deadline()
		for rx.received <= seq {
			if c.poll() {
				deadline = c.deadline()
			}
			if err := c.check(deadline); err != nil {
				return 0, ctlMsg{}, fmt.Errorf("round trip %d: %w", seq, err)
			}
		}
	}
	end := time.Now()
	cl.rtt = append(cl.rtt, end.Sub(sentAt))
	el := end.Sub(t0)
	d, err := c.waitCtl(ctlDone, false)
	if err != nil {
		return 0, d, err
	}
	cl.serverReport(d)
	return el, d, c.drain()
}

// medianDuration returns the median of sorted durations (0 for none).
func medianDuration(d []time.Duration) time.Duration {
	switch n := len(d); {
	case n == 0:
		return 0
	case n%2 == 1:
		return d[n/2]
	default:
		return (d[n/2-1] + d[n/2]) / 2
	}
}

// bandwidth measures the streaming rate: every send token in flight (at
// most tp.Depth messages), timed from the first send to the server's done
// message, which it sends when it has received every message.
func (cl *Client) bandwidth(i int, tp TestPoint) (time.Duration, ctlMsg, error) {
	c, v := cl.c, &cl.ver
	v.begin()
	verify := cl.Opts.Verify
	if err := c.sendCtl(&ctlMsg{Type: ctlBegin, Point: i, Mode: modeBandwidth, Size: tp.Size, Length: tp.Length,
		Prio: uint8(tp.Priority), Count: tp.Iterations, Depth: tp.Depth}); err != nil {
		return 0, ctlMsg{}, err
	}
	if _, err := c.waitCtl(ctlReady, false); err != nil {
		return 0, ctlMsg{}, err
	}
	slots := sendSlots(tp.Depth, tp.Length, verify, pattern.Key{Size: tp.Size, Length: tp.Length})
	next, sent := 0, 0
	t0 := time.Now()
	deadline := c.deadline()
	for len(c.ctlIn) == 0 {
		for sent < tp.Iterations {
			s := slots[next%len(slots)]
			if s.busy {
				break
			}
			if verify {
				pattern.Fill(s.buf[:tp.Length], pattern.Key{Size: tp.Size, Length: tp.Length, Seq: uint64(sent), Dir: pattern.Request})
			}
			ok, err := c.trySend(s, tp.Size, tp.Length, tp.Priority)
			if err != nil {
				return 0, ctlMsg{}, err
			}
			if !ok {
				break
			}
			next++
			sent++
		}
		if c.poll() {
			deadline = c.deadline()
		}
		if err := c.check(deadline); err != nil {
			return 0, ctlMsg{}, fmt.Errorf("after %d of %d messages: %w", sent, tp.Iterations, err)
		}
	}
	el := time.Since(t0)
	d, err := c.waitCtl(ctlDone, false)
	if err != nil {
		return 0, d, err
	}
	if d.Received != tp.Iterations {
		return 0, d, fmt.Errorf("%w: server received %d of %d messages", ErrProtocol, d.Received, tp.Iterations)
	}
	cl.serverReport(d)
	return el, d, c.drain()
}
