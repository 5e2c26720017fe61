package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"

	"github.com/ethergm/ethergm/bench/internal/ctl"
	"github.com/ethergm/ethergm/bench/internal/result"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/membuf"
)

// incastSend sends o.size-byte messages to -peer with o.depth of them in
// flight, sleeping in BlockingReceiveNoSpin while none can be sent (many
// senders share a few cores), until SIGINT/SIGTERM or for o.Duration,
// then waits for every completion and prints a result.IncastSend record.
func incastSend(o *options) error {
	s, peer, err := openSender(o, true, o.depth)
	if err != nil {
		return err
	}
	p, stop := s.p, s.stop
	defer p.Close()
	defer startWatchdog(p)()
	size := gm.MinSizeForLength(o.size)
	deadline := time.Now().Add(o.Duration)
	progress := time.Now()
	for done := false; !done || s.inflight > 0; {
		for !done && s.inflight < len(s.slots) {
			sl := s.slots[s.next%len(s.slots)]
			if sl.busy {
				s.next++
				continue
			}
			err := p.SendToPeerWithCallback(sl.buf, size, o.size, o.pri, peer, s.cb, sl)
			if errors.Is(err, gm.ErrNoSendToken) {
				break
			}
			if err != nil {
				return err
			}
			sl.busy = true
			s.inflight++
			s.next++
		}
		e := p.BlockingReceiveNoSpin()
		switch {
		case e.Type == gm.NoRecvEvent:
			return errors.New("port closed")
		case e.Type.IsRecv():
			n := e.SenderNode
			p.Unknown(e)
			return fmt.Errorf("%w from node %d", errUnexpected, n)
		}
		before := s.done
		p.Unknown(e)
		now := time.Now()
		if s.done != before {
			progress = now
		}
		done = done || now.After(deadline) || stop.Load()
		switch {
		case s.failures > 0:
			return fmt.Errorf("%d sends failed, the latest with %v (%s)", s.failures, s.lastFail, statsNote(p))
		case now.Sub(progress) > o.Timeout:
			return fmt.Errorf("no send completed for %v (%d in flight; %s)", o.Timeout, s.inflight, statsNote(p))
		}
	}
	st := p.Stats()
	rec := result.IncastSend{
		Tool: "egm-gmperf", Mode: "incast-send", Messages: s.done, DataFrames: st.DataSent, Resends: st.DataRetransmitted,
		ResendsLoss: st.RetransmitsLoss, ResendsTimeout: st.RetransmitsTimeout, ResendsGoBack: st.RetransmitsGoBack,
		CutsLoss: st.WindowCutsLoss, CutsDelay: st.WindowCutsDelay,
		Note: fmt.Sprintf("gm port, %d-byte messages at %s priority, %d in flight, BlockingReceiveNoSpin", o.size, prioName(o.pri), o.depth),
	}
	for _, c := range p.Info().Congestion {
		if c.Node == peer {
			rec.Window, rec.MinRTTus, rec.SRTTus = c.Window, c.MinRTT, c.SRTT
		}
	}
	rec.Extra = statsNote(p)
	return result.Print(os.Stdout, rec)
}

// incastSink keeps o.buffers receive buffers provided, takes o.size-byte
// messages from any sender with BlockingReceive, and prints a
// result.IncastSink record for the interval of o.Duration that starts
// o.warm after the first message of the last of o.senders senders to
// start: the messages each sender delivered in it. Then it goes on
// receiving (so that the senders finish) until SIGINT/SIGTERM.
func incastSink(o *options) error {
	p, err := open(o)
	if err != nil {
		return err
	}
	defer p.Close()
	stop := ctl.StopFlag()
	defer startWatchdog(p)()
	ctl.Ready() // before the buffers, as streamRecv
	size := gm.MinSizeForLength(o.size)
	for range o.buffers {
		if err := p.ProvideReceiveBuffer(membuf.Touched(o.size), size, o.pri, 0); err != nil {
			return fmt.Errorf("provide buffer %d: %w", o.buffers, err)
		}
	}
	counts := map[gm.NodeID]uint64{}
	var base map[gm.NodeID]uint64
	var first, t0 time.Time
	lastSeen := time.Now()
	measured := false
	for {
		e := p.BlockingReceive()
		now := time.Now()
		switch {
		case e.Type == gm.NoRecvEvent:
			return errors.New("port closed")
		case e.Type.IsRecv():
			if e.Length != o.size {
				return fmt.Errorf("a %d-byte message from node %d, want %d bytes", e.Length, e.SenderNode, o.size)
			}
			counts[e.SenderNode]++
			lastSeen = now
			if first.IsZero() && len(counts) >= o.senders {
				first = now // every sender sends: the warm-up starts
			}
			if err := p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag); err != nil {
				return fmt.Errorf("provide: %w", err)
			}
		default:
			p.Unknown(e)
		}
		switch {
		case first.IsZero() || measured:
		case base == nil && now.Sub(first) >= o.warm:
			base, t0 = maps(counts), now
		case base != nil && now.Sub(t0) >= o.Duration:
			measured = true
			if err := sinkResult(o, p, base, counts, now.Sub(t0)); err != nil {
				return err
			}
		}
		switch {
		case stop.Load() && measured:
			return nil
		case stop.Load():
			return fmt.Errorf("interrupted before the end of the measured interval (%d senders seen)", len(counts))
		case now.Sub(lastSeen) > o.Timeout && !measured:
			return fmt.Errorf("no message for %v (%d senders seen; %s)", o.Timeout, len(counts), statsNote(p))
		}
	}
}

func maps(m map[gm.NodeID]uint64) map[gm.NodeID]uint64 {
	c := make(map[gm.NodeID]uint64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// sinkResult prints the sink's record for the counts from base to end over
// d.
func sinkResult(o *options, p *gm.Port, base, end map[gm.NodeID]uint64, d time.Duration) error {
	rec := result.IncastSink{
		Tool: "egm-gmperf", Mode: "incast-sink", Seconds: d.Seconds(), AppPayload: o.size,
		Note: fmt.Sprintf("gm port, %d-byte messages at %s priority from any sender, %d receive buffers, BlockingReceive; %v after the first message",
			o.size, prioName(o.pri), o.buffers, o.warm),
	}
	var nodes []gm.NodeID
	for n := range end {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	var g []float64
	for _, n := range nodes {
		m := end[n] - base[n]
		x := float64(m) * float64(o.size) * 8 / d.Seconds() / 1e9
		rec.Senders = append(rec.Senders, result.SenderGoodput{Node: uint32(n), Messages: m, GbpsApp: x})
		rec.GbpsApp += x
		g = append(g, x)
	}
	for len(g) < o.senders {
		g = append(g, 0)
	}
	rec.Jain = result.Jain(g)
	rec.Extra = statsNote(p)
	return result.Print(os.Stdout, rec)
}

// tcpSend writes to the TCP sink at -peer (host:port) until
// SIGINT/SIGTERM or for o.Duration.
func tcpSend(o *options) error {
	c, err := net.DialTimeout("tcp", o.peer, o.Timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := ctl.StopFlag()
	buf := make([]byte, 256<<10)
	deadline := time.Now().Add(o.Duration)
	for time.Now().Before(deadline) && !stop.Load() {
		if err := c.SetWriteDeadline(time.Now().Add(o.Timeout)); err != nil {
			return err
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// tcpSink accepts one connection on -tcp and prints a result.TCPSink
// record for the interval of o.Duration that starts o.warm after the first
// byte; it reads on until the sender closes or SIGINT/SIGTERM.
func tcpSink(o *options) error {
	ln, err := net.Listen("tcp", o.tcp)
	if err != nil {
		return err
	}
	defer ln.Close()
	stop := ctl.StopFlag()
	ctl.Ready()
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 256<<10)
	var total, base uint64
	var first, t0 time.Time
	measured := false
	for !stop.Load() {
		if err := c.SetReadDeadline(time.Now().Add(watchdog)); err != nil {
			return err
		}
		n, err := c.Read(buf)
		now := time.Now()
		total += uint64(n)
		if n > 0 && first.IsZero() {
			first = now
		}
		switch {
		case first.IsZero() || measured:
		case t0.IsZero() && now.Sub(first) >= o.warm:
			base, t0 = total, now
		case !t0.IsZero() && now.Sub(t0) >= o.Duration:
			measured = true
			d := now.Sub(t0).Seconds()
			rec := result.TCPSink{Tool: "egm-gmperf", Mode: "tcp-sink", Seconds: d, Bytes: total - base, Gbps: float64(total-base) * 8 / d / 1e9}
			if err := result.Print(os.Stdout, rec); err != nil {
				return err
			}
		}
		var ne net.Error
		switch {
		case errors.Is(err, io.EOF) && measured:
			return nil
		case errors.As(err, &ne) && ne.Timeout():
		case err != nil:
			return fmt.Errorf("after %d bytes: %w", total, err)
		}
	}
	if !measured {
		return errors.New("interrupted before the end of the measured interval")
	}
	return nil
}
