package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/bench/internal/ctl"
	"github.com/ethergm/ethergm/bench/internal/result"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/membuf"
	"github.com/ethergm/ethergm/wire"
)

type options struct {
	ctl.Run
	key     string // cluster key file (-key)
	unit    string
	port    int
	mode    string
	peer    string
	size    int
	prio    string
	pri     gm.Priority
	buffers int
	window  int
	profile string        // CPU profile file (-cpuprofile)
	depth   int           // incast: messages in flight per sender (-depth)
	senders int           // incast sink: senders expected (-senders)
	warm    time.Duration // incast and TCP sinks: time before the measured interval (-warm)
	tcp     string        // TCP sink: listen address (-tcp)
	v2      bool          // TPACKET_V2 receive ring (-v2)
}

func main() {
	var o options
	flag.StringVar(&o.unit, "i", "", "GM unit: an interface name or list (default: $ETHERGM_UNIT, else the only interface that is up)")
	flag.IntVar(&o.port, "port", 2, "GM port id, the same on both sides (SendToPeerWithCallback)")
	flag.StringVar(&o.mode, "mode", "pingpong", "pingpong, stream, incast (many senders, one sink) or tcp (a TCP flow beside an incast)")
	flag.IntVar(&o.depth, "depth", 4, "incast sender: messages in flight")
	flag.IntVar(&o.senders, "senders", 0, "incast sink: senders expected; the warm-up starts once each sent a message")
	flag.DurationVar(&o.warm, "warm", time.Second, "incast and TCP sinks: time from the first message before the measured interval of -d")
	flag.StringVar(&o.tcp, "tcp", ":5201", "TCP sink: listen address")
	flag.StringVar(&o.peer, "peer", "", "the server's host name in the node map, or its node id (client)")
	flag.IntVar(&o.size, "size", 0, "message length in bytes (default 8 for pingpong, 1 MiB for stream)")
	flag.StringVar(&o.prio, "prio", "", "GM priority, high or low (default high for pingpong, low for stream)")
	flag.IntVar(&o.buffers, "buffers", 64, "receive buffers the stream receiver keeps provided")
	flag.IntVar(&o.window, "window", 0, "gm.Config.Window: frames in flight per stream (0: the gm default)")
	flag.StringVar(&o.key, "key", "", "cluster key `FILE` (docs/SECURITY.md): seal and verify every frame (both sides need it)")
	flag.BoolVar(&o.v2, "v2", false, "gm.Config.Link.V2: a TPACKET_V2 receive ring instead of the open-block V3 ring")
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of the run to `FILE` (analysis)")
	o.Run.Flags()
	flag.Parse()

	if err := o.Role(); err != nil {
		fatal(err)
	}
	if o.Client && o.peer == "" {
		fatal(errors.New("-client needs -peer"))
	}
	if o.profile != "" {
		f, err := os.Create(o.profile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if err := ctl.Dispatch(modes, o.mode, o.Server, &o); err != nil {
		pprof.StopCPUProfile()
		fatal(err)
	}
}

// modes are the values of -mode.
var modes = []ctl.Mode[options]{
	{Name: "pingpong", Check: pingCheck, Server: pingSide(false, pingServer), Client: pingSide(true, pingClient)},
	{Name: "stream", Check: streamCheck, Server: streamRecv, Client: streamSend},
	{Name: "incast", Check: incastCheck, Server: incastSink, Client: incastSend},
	{Name: "tcp", Server: tcpSink, Client: tcpSend},
}

// pingCheck, streamCheck and incastCheck are the modes' Checks: each sets
// the mode's default size and priority and checks what the mode needs.
func pingCheck(o *options) error { return setDefaults(o, 8, gm.HighPriority) }

func streamCheck(o *options) error {
	if err := setDefaults(o, 1<<20, gm.LowPriority); err != nil {
		return err
	}
	if o.size <= endLen {
		return fmt.Errorf("-size %d: stream messages must be longer than the %d-byte end marker", o.size, endLen)
	}
	return nil
}

func incastCheck(o *options) error {
	if err := setDefaults(o, 1<<20, gm.LowPriority); err != nil {
		return err
	}
	if o.depth < 1 {
		return fmt.Errorf("-depth %d: want at least 1", o.depth)
	}
	return nil
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "egm-gmperf: %v\n", err)
	os.Exit(1)
}

// setDefaults fills in the mode's default size and priority.
func setDefaults(o *options, size int, pri gm.Priority) error {
	if o.size == 0 {
		o.size = size
	}
	if o.size < 0 || o.size > gm.MaxLengthForSize(31) {
		return fmt.Errorf("bad -size %d", o.size)
	}
	switch o.prio {
	case "":
		o.pri = pri
	case "high":
		o.pri = gm.HighPriority
	case "low":
		o.pri = gm.LowPriority
	default:
		return fmt.Errorf("-prio %q: want high or low", o.prio)
	}
	return nil
}

func prioName(p gm.Priority) string {
	if p == gm.HighPriority {
		return "high"
	}
	return "low"
}

// open opens the benchmark's port with the default configuration (except
// -window). Host name, node map and state directory come from the
// environment (ETHERGM_HOST, ETHERGM_MAP, ETHERGM_STATE_DIR).
func open(o *options) (*gm.Port, error) {
	return gm.Open(o.unit, o.port, "egm-gmperf", &gm.Config{Window: o.window, ClusterKeyFile: o.key, Link: link.Config{V2: o.v2}})
}

// openSender opens the benchmark's port, resolves -peer if client is set
// (else peer is 0), and returns the port's sender of slots buffers of
// o.size bytes (slots 0: one per send token), stopped by SIGINT/SIGTERM.
// Closing s.p closes the port.
func openSender(o *options, client bool, slots int) (s *sender, peer gm.NodeID, err error) {
	p, err := open(o)
	if err != nil {
		return nil, 0, err
	}
	if client {
		if peer, err = resolvePeer(p, o.peer); err != nil {
			p.Close()
			return nil, 0, err
		}
	}
	if slots == 0 {
		slots = p.NumSendTokens()
	}
	return newSender(p, slots, o.size, o.Timeout, ctl.StopFlag()), peer, nil
}

// resolvePeer returns the node id of -peer: a host name of the node map or
// a number.
func resolvePeer(p *gm.Port, peer string) (gm.NodeID, error) {
	if id, err := p.HostNameToNodeID(peer); err == nil {
		return id, nil
	}
	n, err := strconv.ParseUint(peer, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("-peer %q is neither a host of the node map nor a node id", peer)
	}
	return gm.NodeID(n), nil
}

func statsNote(p *gm.Port) string {
	s, l := p.Stats(), p.LinkStats()
	return fmt.Sprintf("data_sent=%d resent=%d acks_sent=%d nacks_sent=%d (no buffer %d) data_rcvd=%d dups=%d out_of_window=%d delivered=%d "+
		"nacks_rcvd=%d acks_rcvd=%d timeouts=%d partial_batches=%d; link mode=%s rx=%d tx=%d kernel_drops=%d freezes=%d crc_errors=%d",
		s.DataSent, s.DataRetransmitted, s.AcksSent, s.NacksSent, s.NacksSentNoBuffer, s.DataReceived, s.Duplicates, s.OutOfWindow, s.Delivered,
		s.NacksReceived, s.AcksReceived, s.Timeouts, s.PartialBatches, l.Mode, l.RxFrames, l.TxFrames, l.KernelDrops, l.QueueFreezes, l.CRCErrors)
}

// slot is a send buffer, busy from its send until its callback.
type slot struct {
	buf  []byte
	busy bool
}

// sender keeps send buffers and the completion state of one port's sends.
// It is used from one goroutine (callbacks run inside Unknown).
type sender struct {
	p        *gm.Port
	slots    []*slot
	next     int
	inflight int
	done     uint64    // sends completed
	lastDone time.Time // when the latest completion was seen
	failures int
	lastFail gm.Status
	cb       gm.SendCallback
	timeout  time.Duration
	stop     *atomic.Bool
}

func newSender(p *gm.Port, n, length int, timeout time.Duration, stop *atomic.Bool) *sender {
	s := &sender{p: p, timeout: timeout, stop: stop}
	for range n {
		s.slots = append(s.slots, &slot{buf: membuf.Touched(max(length, 1))})
	}
	s.cb = func(_ *gm.Port, ctx any, st gm.Status) {
		if sl, ok := ctx.(*slot); ok {
			sl.busy = false
		}
		s.inflight--
		s.done++
		s.lastDone = time.Now()
		if st != gm.Success {
			s.failures++
			s.lastFail = st
		}
	}
	return s
}

// errUnexpected is returned when a message arrives where none may.
var errUnexpected = errors.New("unexpected message")

// poll handles one event, if any, without waiting. It reports whether
// there was one. A receive event is an error: the caller is not expecting
// messages.
func (s *sender) poll() (bool, error) {
	e := s.p.Receive()
	switch {
	case e.Type == gm.NoRecvEvent:
		return false, nil
	case e.Type.IsRecv():
		n, pt := e.SenderNode, e.SenderPort
		s.p.Unknown(e) // provides the buffer again
		return true, fmt.Errorf("%w from node %d port %d", errUnexpected, n, pt)
	}
	s.p.Unknown(e)
	return true, nil
}

// check returns the error that ends a wait: a failed send, a stop, or no
// progress since since for the timeout.
func (s *sender) check(since time.Time) error {
	switch {
	case s.failures > 0:
		return fmt.Errorf("%d sends failed, the latest with %v (%s)", s.failures, s.lastFail, statsNote(s.p))
	case s.stop.Load():
		return errors.New("interrupted")
	case time.Since(since) > s.timeout:
		return fmt.Errorf("no send completed for %v (%d in flight; %s)", s.timeout, s.inflight, statsNote(s.p))
	}
	return nil
}

// free returns a slot that is not busy, polling until one is.
func (s *sender) free() (*slot, error) {
	var t0 time.Time // taken once a wait begins: no clock read on the fast path
	for spins := 0; ; spins++ {
		for range s.slots {
			sl := s.slots[s.next%len(s.slots)]
			s.next++
			if !sl.busy {
				return sl, nil
			}
		}
		if spins == 0 {
			t0 = time.Now()
		}
		if _, err := s.poll(); err != nil {
			return nil, err
		}
		if spins&1023 == 1023 {
			if err := s.check(maxTime(t0, s.lastDone)); err != nil {
				return nil, err
			}
		}
	}
}

// send sends sl.buf[:length] to node's port of the same id, polling while
// no send token is free.
func (s *sender) send(sl *slot, size uint8, length int, pri gm.Priority, node gm.NodeID) error {
	var t0 time.Time // taken once a wait begins, as in free
	for spins := 0; ; spins++ {
		err := s.p.SendToPeerWithCallback(sl.buf, size, length, pri, node, s.cb, sl)
		if err == nil {
			sl.busy = true
			s.inflight++
			return nil
		}
		if !errors.Is(err, gm.ErrNoSendToken) {
			return err
		}
		if spins == 0 {
			t0 = time.Now()
		}
		if _, err := s.poll(); err != nil {
			return err
		}
		if spins&1023 == 1023 {
			if err := s.check(maxTime(t0, s.lastDone)); err != nil {
				return err
			}
		}
	}
}

// drain polls until every send completed.
func (s *sender) drain() error {
	t0 := time.Now()
	for spins := 0; s.inflight > 0; spins++ {
		if _, err := s.poll(); err != nil {
			return err
		}
		if spins&1023 == 1023 {
			if err := s.check(maxTime(t0, s.lastDone)); err != nil {
				return err
			}
		}
	}
	return s.check(time.Now())
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// pingBuffers is the number of receive buffers each ping-pong side keeps
// provided (one message is in flight at a time).
const pingBuffers = 4

// pingSide returns a role of the ping-pong mode: run on the side's port
// (a client's with its -peer resolved) with its receive buffers provided,
// its sender (openSender) and the messages' size class; the port is
// closed after.
func pingSide(client bool, run func(o *options, s *sender, peer gm.NodeID, size uint8) error) func(*options) error {
	return func(o *options) error {
		s, peer, err := openSender(o, client, pingBuffers)
		if err != nil {
			return err
		}
		defer s.p.Close()
		size := gm.MinSizeForLength(o.size)
		for range pingBuffers {
			if err := s.p.ProvideReceiveBuffer(make([]byte, max(o.size, 1)), size, o.pri, 0); err != nil {
				return fmt.Errorf("provide: %w", err)
			}
		}
		return run(o, s, peer, size)
	}
}

// pingServer answers every message with a message of the same length and
// content (sent from its own buffer), to the sender's node, until
// SIGINT/SIGTERM. It polls with Receive.
func pingServer(o *options, s *sender, _ gm.NodeID, size uint8) error {
	p, stop, msg := s.p, s.stop, make([]byte, o.size)
	ctl.Ready()
	for !stop.Load() {
		e := p.Receive()
		switch {
		case e.Type == gm.NoRecvEvent:
		case e.Type.IsRecv():
			// Copy the request and give its buffer back before anything
			// else touches the port (the event is valid until then).
			node, n := e.SenderNode, copy(msg, e.Message[:e.Length])
			if err := p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag); err != nil {
				return fmt.Errorf("provide: %w", err)
			}
			sl, err := s.free()
			if err != nil {
				return err
			}
			copy(sl.buf, msg[:n])
			if err := s.send(sl, size, n, o.pri, node); err != nil {
				return fmt.Errorf("reply: %w", err)
			}
		default:
			p.Unknown(e)
		}
		if s.failures > 0 {
			return s.check(time.Now())
		}
	}
	return nil
}

// pingClient measures round trips of o.size-byte messages and prints a
// result.Latency record. Both sides poll with Receive.
func pingClient(o *options, s *sender, peer gm.NodeID, size uint8) error {
	p, stop := s.p, s.stop
	pings := result.NewPings(o.N, o.Warmup)
	for i := 0; i < o.Warmup+o.N; i++ {
		sl, err := s.free()
		if err != nil {
			return err
		}
		seq := uint64(i + 1)
		if o.size >= 8 {
			binary.LittleEndian.PutUint64(sl.buf, seq)
		}
		t0 := time.Now()
		if err := s.send(sl, size, o.size, o.pri, peer); err != nil {
			return err
		}
	wait:
		for spins := 0; ; spins++ {
			e := p.Receive()
			switch {
			case e.Type == gm.NoRecvEvent:
				if spins&1023 == 1023 {
					if stop.Load() {
						return errors.New("interrupted")
					}
					if time.Since(t0) > o.Timeout {
						return fmt.Errorf("no reply to message %d after %v (%s)", seq, o.Timeout, statsNote(p))
					}
				}
			case e.Type.IsRecv():
				var got uint64
				if e.Length >= 8 {
					got = binary.LittleEndian.Uint64(e.Message)
				}
				bad := e.Length != o.size || e.SenderNode != peer || (o.size >= 8 && got != seq)
				if err := p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag); err != nil {
					return fmt.Errorf("provide: %w", err)
				}
				if bad {
					return fmt.Errorf("reply to message %d: length %d from node %d carries %d", seq, e.Length, e.SenderNode, got)
				}
				break wait
			default:
				p.Unknown(e)
			}
		}
		rtt := time.Since(t0)
		if s.failures > 0 {
			return s.check(time.Now())
		}
		pings.Add(i, rtt, false)
	}
	res := pings.Latency("egm-gmperf", "pingpong-poll", o.size)
	res.Note = fmt.Sprintf("gm ports, %d-byte messages at %s priority, SendToPeerWithCallback + Receive polling loop on both sides; RTT from send to receive event",
		o.size, prioName(o.pri))
	res.Extra = statsNote(p)
	return result.Print(os.Stdout, res)
}

// endLen is the length of the stream's end marker, a message of its own
// size class carrying the number of data messages sent.
const endLen = 8

// ethPerMessage returns the Ethernet payload bytes that carry a message of
// length bytes on p's link (see ethPayload).
func ethPerMessage(p *gm.Port, length int) int {
	mtu := 1500
	if u := p.Unit(); u != nil && len(u.Interfaces) > 0 {
		if ifc, err := net.InterfaceByName(u.Interfaces[0]); err == nil {
			mtu = ifc.MTU
		}
	}
	return ethPayload(length, mtu)
}

// ethPayload returns the Ethernet payload bytes that carry a message of
// length bytes at link MTU mtu: one EtherGM header per segment of MTU-44
// bytes of message (docs/PROTOCOL.md).
func ethPayload(length, mtu int) int {
	seg := mtu - wire.HeaderLen
	nseg := max(1, (length+seg-1)/seg)
	return length + nseg*wire.HeaderLen
}

// streamSend sends o.size-byte messages for o.Duration with every send
// token in flight (one send buffer per token), then the end marker, waits
// for every completion and prints a result.Stream record (sender side:
// first send to last completion). It polls with Receive.
func streamSend(o *options) error {
	s, peer, err := openSender(o, true, 0)
	if err != nil {
		return err
	}
	p, stop, tokens := s.p, s.stop, len(s.slots)
	defer p.Close()
	size := gm.MinSizeForLength(o.size)
	var sent uint64
	start := time.Now()
	deadline := start.Add(o.Duration)
	for time.Now().Before(deadline) && !stop.Load() {
		sl, err := s.free()
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(sl.buf, sent)
		if err := s.send(sl, size, o.size, o.pri, peer); err != nil {
			return err
		}
		sent++
	}
	if stop.Load() {
		return errors.New("interrupted")
	}
	end := &slot{buf: make([]byte, endLen)}
	binary.LittleEndian.PutUint64(end.buf, sent)
	if err := s.send(end, gm.MinSizeForLength(endLen), endLen, o.pri, peer); err != nil {
		return fmt.Errorf("end marker: %w", err)
	}
	if err := s.drain(); err != nil {
		return err
	}
	st := p.Stats()
	rec := result.Stream{
		Tool: "egm-gmperf", Mode: "stream-send", Frames: sent, AppPayload: o.size, EthPayload: ethPerMessage(p, o.size),
		Seconds: s.lastDone.Sub(start).Seconds(), Sent: sent, DataFrames: st.DataSent, Resends: st.DataRetransmitted,
		Note: fmt.Sprintf("gm port, %d-byte messages at %s priority, %d send tokens all in flight, Receive polling; frames = messages; first send to last completion",
			o.size, prioName(o.pri), tokens),
		Extra: statsNote(p),
	}
	rec.Goodput()
	return result.Print(os.Stdout, rec)
}

// watchdog is the period of the alarm that wakes a BlockingReceive (the
// stream receiver's, the incast sender's and sink's) to check the stop
// flag and the timeout.
const watchdog = 100 * time.Millisecond

// startWatchdog sets an alarm on p that rings every watchdog until the
// returned function cancels it.
func startWatchdog(p *gm.Port) (cancel func()) {
	var alarm gm.Alarm
	var rearm func(any)
	rearm = func(any) { p.SetAlarm(&alarm, uint64(watchdog/time.Microsecond), rearm, nil) }
	rearm(nil)
	return func() { p.CancelAlarm(&alarm) }
}

// streamRecv keeps o.buffers receive buffers provided, receives with
// BlockingReceive until the end marker and prints a result.Stream record:
// the messages after the first, over the time from the first message's
// receive event to the last one's. Then it keeps the port open, so that
// acknowledgements the sender missed are sent again when it resends, until
// SIGINT/SIGTERM or o.Timeout without a frame.
func streamRecv(o *options) error {
	p, err := open(o)
	if err != nil {
		return err
	}
	defer p.Close()
	size, endSize := gm.MinSizeForLength(o.size), gm.MinSizeForLength(endLen)
	if size == endSize {
		return fmt.Errorf("-size %d is in the end marker's size class", o.size)
	}
	stop := ctl.StopFlag()
	defer startWatchdog(p)()
	// Ready before the buffers: touching them (membuf) can take seconds on
	// a loaded virtual machine, and a harness waits for the ready line a
	// bounded time. A message that arrives before its buffer is refused
	// and sent again (no-buffer probing); the timing starts at the first
	// receive event.
	ctl.Ready()
	for range o.buffers {
		if err := p.ProvideReceiveBuffer(membuf.Touched(o.size), size, o.pri, 0); err != nil {
			return fmt.Errorf("provide buffer %d: %w", o.buffers, err)
		}
	}
	if err := p.ProvideReceiveBuffer(make([]byte, endLen), endSize, o.pri, 0); err != nil {
		return fmt.Errorf("provide end-marker buffer: %w", err)
	}
	var (
		got, sent, outOfOrder uint64
		first, last           time.Time
		lastSeen              = time.Now()
		rxFrames              uint64
		ended                 bool
		stopAt                time.Time
	)
	for {
		e := p.BlockingReceive()
		switch {
		case e.Type == gm.NoRecvEvent:
			return errors.New("port closed")
		case e.Type.IsRecv() && e.Size == size && !ended:
			now := time.Now()
			lastSeen = now
			if got == 0 {
				first = now
			}
			last = now
			if e.Length != o.size || binary.LittleEndian.Uint64(e.Message) != got {
				outOfOrder++
			}
			got++
			if err := p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag); err != nil {
				return fmt.Errorf("provide: %w", err)
			}
		case e.Type.IsRecv() && e.Size == endSize && !ended:
			sent = binary.LittleEndian.Uint64(e.Message)
			ended = true
			if err := recvResult(o, p, got, sent, outOfOrder, first, last); err != nil {
				return err
			}
		case e.Type == gm.AlarmEvent:
			p.Unknown(e)
			// Frames the protocol handled (resends, after the end too)
			// count as activity.
			if n := p.LinkStats().RxFrames; n != rxFrames {
				rxFrames, lastSeen = n, time.Now()
			}
			switch {
			case stop.Load() && ended:
				return nil
			case stop.Load() && stopAt.IsZero():
				// Let events already queued (the end marker) arrive.
				stopAt = time.Now()
			case stop.Load() && time.Since(stopAt) > time.Second:
				return fmt.Errorf("interrupted after %d messages, before the end marker", got)
			case time.Since(lastSeen) > o.Timeout && ended:
				return nil
			case time.Since(lastSeen) > o.Timeout:
				return fmt.Errorf("no frame for %v after %d messages (%s)", o.Timeout, got, statsNote(p))
			}
		default:
			p.Unknown(e)
		}
	}
}

// recvResult checks the receiver's counts and prints its record.
func recvResult(o *options, p *gm.Port, got, sent, outOfOrder uint64, first, last time.Time) error {
	if got != sent || outOfOrder > 0 {
		return fmt.Errorf("received %d messages (%d out of order or wrong length), the sender sent %d", got, outOfOrder, sent)
	}
	if got < 2 {
		return fmt.Errorf("only %d messages: no interval to time", got)
	}
	rec := result.Stream{
		Tool: "egm-gmperf", Mode: "stream-recv", Frames: got - 1, AppPayload: o.size, EthPayload: ethPerMessage(p, o.size),
		Seconds: last.Sub(first).Seconds(), Sent: sent, KernelDrops: p.LinkStats().KernelDrops,
		Note: fmt.Sprintf("gm port, %d-byte messages at %s priority, %d receive buffers, BlockingReceive; frames = messages after the first, "+
			"timed from the first message's receive event to the last one's", o.size, prioName(o.pri), o.buffers),
		Extra: statsNote(p),
	}
	rec.Goodput()
	return result.Print(os.Stdout, rec)
}
