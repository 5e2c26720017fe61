package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ethergm/ethergm/bench/internal/ctl"
	"github.com/ethergm/ethergm/bench/internal/result"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/membuf"
	"github.com/ethergm/ethergm/wire"
)

// port is the EtherGM target and source port of every benchmark frame.
const port = 1

type options struct {
	ctl.Run
	ctl.Ether
	key      string // cluster key file (-key)
	mode     string
	wait     bool
	spin     time.Duration
	size     int
	batch    int
	zeroCopy bool
	noCRC    bool
	msg      int
	v2       bool
}

func main() {
	var o options
	flag.StringVar(&o.mode, "mode", "pingpong", "pingpong or stream")
	flag.BoolVar(&o.wait, "wait", false, "receive with link.Wait (SpinTime<0 for pingpong: sleep in the kernel) instead of polling Recv")
	flag.DurationVar(&o.spin, "spin", -1, "Config.SpinTime with -wait (negative: never spin; 0: the link's default)")
	flag.IntVar(&o.size, "size", 0, "Ethernet payload bytes per frame, EtherGM header included (default 64 for pingpong, the MTU for stream)")
	flag.IntVar(&o.batch, "batch", 64, "frames per SendBatch or Flush (stream sender)")
	flag.BoolVar(&o.zeroCopy, "zerocopy", false, "stream sender: build frames in place with TxSlot/TxCommit/Flush instead of SendBatch (analysis)")
	flag.IntVar(&o.msg, "msg", 1<<20, "stream sender: frames carry the successive bytes of a message buffer of this many `bytes`, as gm's 1 MiB messages do (one frame's worth: every frame copies the same cached payload)")
	flag.BoolVar(&o.v2, "v2", false, "link.Config.V2: a TPACKET_V2 receive ring instead of the open-block V3 ring")
	flag.BoolVar(&o.noCRC, "nocrc", false, "receiver: Config.NoCRCCheck, skip the CRC check (analysis only)")
	flag.StringVar(&o.key, "key", "", "cluster key `FILE` (docs/SECURITY.md): seal and verify every frame (both sides need it)")
	o.Run.Flags()
	o.Ether.Flags()
	flag.Parse()

	if err := o.ParsePeer(); err != nil {
		fatal(err)
	}
	if err := o.Role(); err != nil {
		fatal(err)
	}
	if err := ctl.Dispatch(modes, o.mode, o.Server, &o); err != nil {
		fatal(err)
	}
}

// modes are the values of -mode.
var modes = []ctl.Mode[options]{
	{Name: "pingpong", Server: pingServer, Client: pingClient},
	{Name: "stream", Server: streamRecv, Client: streamSend},
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "egm-linkperf: %v\n", err)
	os.Exit(1)
}

// openLink opens the link with the benchmark's configuration.
func openLink(o *options, bypass bool) (*link.Link, error) {
	cfg := &link.Config{Ports: 1 << port, QdiscBypass: bypass, NoCRCCheck: o.noCRC, V2: o.v2}
	if o.key != "" {
		a, err := link.LoadAuth(o.key, 0)
		if err != nil {
			return nil, err
		}
		cfg.Auth = a
	}
	if o.wait {
		cfg.SpinTime = o.spin
	}
	return link.Open(o.Iface, cfg)
}

// payloadLen returns the data bytes per frame for an Ethernet payload of
// size bytes (EtherGM header included).
func payloadLen(size int) (int, error) {
	n := size - wire.HeaderLen
	if n < 0 {
		return 0, fmt.Errorf("-size %d is smaller than the EtherGM header (%d)", size, wire.HeaderLen)
	}
	return n, nil
}

// receiver hides the difference between polling and waiting.
type receiver struct {
	l      *link.Link
	wait   bool
	frames [][]byte
	hdrs   []wire.Header
}

func newReceiver(l *link.Link, wait bool) *receiver {
	return &receiver{l: l, wait: wait, frames: make([][]byte, 64), hdrs: make([]wire.Header, 64)}
}

// recv returns the frames received now (polling) or within d (waiting),
// and their EtherGM headers.
func (r *receiver) recv(d time.Duration) ([][]byte, []wire.Header, error) {
	var n int
	if !r.wait {
		n = r.l.Recv(r.frames)
	} else {
		var err error
		if n, err = r.l.Wait(r.frames, d); err != nil {
			return nil, nil, err
		}
	}
	for i, f := range r.frames[:n] {
		h, err := wire.ParseFrame(f, wire.EtherType)
		if err != nil {
			return nil, nil, err
		}
		r.hdrs[i] = h
	}
	return r.frames[:n], r.hdrs[:n], nil
}

func statsNote(l *link.Link) string {
	s := l.Stats()
	return fmt.Sprintf("mode=%s rx=%d tx=%d kernel_drops=%d freezes=%d crc_errors=%d malformed=%d",
		l.Mode(), s.RxFrames, s.TxFrames, s.KernelDrops, s.QueueFreezes, s.CRCErrors, s.Malformed)
}

// openPing opens a ping-pong side's link and returns it with its MAC
// address and its receiver.
func openPing(o *options) (*link.Link, [6]byte, *receiver, error) {
	l, err := openLink(o, false)
	if err != nil {
		return nil, [6]byte{}, nil, err
	}
	return l, [6]byte(l.HardwareAddr()), newReceiver(l, o.wait), nil
}

// pingServer answers every request with a freshly built reply carrying the
// request's sequence number and data, until SIGINT/SIGTERM.
func pingServer(o *options) error {
	l, src, r, err := openPing(o)
	if err != nil {
		return err
	}
	defer l.Close()
	reply := make([]byte, 0, 2048)
	stop := ctl.StopFlag()
	ctl.Ready()
	for !stop.Load() {
		frames, hdrs, err := r.recv(100 * time.Millisecond)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		for i, h := range hdrs {
			f := frames[i]
			fields := wire.HeaderFields{
				Type: wire.TypeDatagram, TargetPort: h.SourcePort(), SourcePort: port,
				TargetNode: h.SourceNode(), SourceNode: h.TargetNode(), Seq: h.Seq(),
			}
			reply = wire.AppendFrame(reply[:0], wire.Ethernet(f).Src(), src, wire.EtherType, &fields, h.Payload())
			if err := l.Send(reply); err != nil {
				return fmt.Errorf("send: %w", err)
			}
		}
	}
	return nil
}

// pingClient measures round trips and prints a result.Latency record.
// Requests without a reply within 200 ms (warm-up) or o.Timeout are sent
// again and not measured.
func pingClient(o *options) error {
	if o.size == 0 {
		o.size = 64
	}
	plen, err := payloadLen(o.size)
	if err != nil {
		return err
	}
	l, src, r, err := openPing(o)
	if err != nil {
		return err
	}
	defer l.Close()
	data := make([]byte, plen)
	req := make([]byte, 0, 2048)
	fields := wire.HeaderFields{Type: wire.TypeDatagram, TargetPort: port, SourcePort: port, TargetNode: 2, SourceNode: 1}
	pings := result.NewPings(o.N, o.Warmup)
	rs := ctl.NewResender(ctl.StopFlag(), o.Timeout)
	for i := 0; i < o.Warmup+o.N; i++ {
		fields.Seq++
		req = wire.AppendFrame(req[:0], o.Peer, src, wire.EtherType, &fields, data)
		resend := ctl.ResendPeriod(i, o.Warmup, o.Timeout)
		rs.Sent(time.Now(), resend)
		t0 := time.Now()
		if err := l.Send(req); err != nil {
			return fmt.Errorf("send: %w", err)
		}
	wait:
		for spins := 0; ; spins++ {
			_, hdrs, err := r.recv(resend)
			if err != nil {
				return fmt.Errorf("client: %w", err)
			}
			for _, h := range hdrs {
				switch s := h.Seq(); {
				case s == fields.Seq:
					break wait
				case s > fields.Seq:
					return fmt.Errorf("reply seq %d ahead of request %d", s, fields.Seq)
				}
				// An older reply (duplicate after a resend): skip it.
			}
			if len(hdrs) == 0 && (o.wait || spins&1023 == 0) {
				if err := rs.Resend(l.Send, req); err != nil {
					return fmt.Errorf("seq %d: %w (%s)", fields.Seq, err, statsNote(l))
				}
			}
		}
		pings.Add(i, time.Since(t0), rs.Retried)
	}
	pings.Retries = rs.Requests
	res := pings.Latency("egm-linkperf", "pingpong-poll", o.size)
	res.Note = "link.Recv polling loop on both sides"
	if o.wait {
		res.Mode = "pingpong-wait"
		res.Note = fmt.Sprintf("link.Wait with SpinTime %v on both sides", o.spin)
	}
	res.Extra = statsNote(l)
	return result.Print(os.Stdout, res)
}

// streamSend sends full frames with SendBatch for o.Duration, then end
// markers.
func streamSend(o *options) error {
	l, err := openLink(o, true)
	if err != nil {
		return err
	}
	defer l.Close()
	if o.size == 0 {
		o.size = l.MTU()
	}
	plen, err := payloadLen(o.size)
	if err != nil {
		return err
	}
	src := [6]byte(l.HardwareAddr())
	msg := membuf.Touched(max(o.msg, plen)) // as egm-gmperf's send buffers
	off := 0
	next := func() []byte { // the next frame's share of the message
		if off+plen > len(msg) {
			off = 0
		}
		off += plen
		return msg[off-plen : off]
	}
	bufs := make([][]byte, o.batch)
	for i := range bufs {
		bufs[i] = make([]byte, 0, wire.EthHeaderLen+o.size)
	}
	fields := wire.HeaderFields{Type: wire.TypeDatagram, TargetPort: port, SourcePort: port, TargetNode: 2, SourceNode: 1}
	var seq uint32
	var busy int
	until := ctl.NewDeadline(ctl.StopFlag(), o.Duration)
	for !until.Done() {
		if o.zeroCopy {
			n, err := sendInPlace(l, o, src, &fields, seq, next)
			if err != nil {
				return err
			}
			seq += uint32(n)
			continue
		}
		for i := range bufs {
			fields.Seq = seq + uint32(i)
			bufs[i] = wire.AppendFrame(bufs[i][:0], o.Peer, src, wire.EtherType, &fields, next())
		}
		pending := bufs
		for len(pending) > 0 {
			n, err := l.SendBatch(pending)
			pending = pending[n:]
			if err != nil && !errors.Is(err, link.ErrTxBusy) {
				return fmt.Errorf("SendBatch: %w", err)
			}
			if err != nil {
				busy++
			}
		}
		seq += uint32(len(bufs))
	}
	elapsed := time.Since(until.Start)
	end := wire.AppendFrame(nil, o.Peer, src, wire.EtherType,
		&wire.HeaderFields{Type: wire.TypeDatagram, TargetPort: port, SourcePort: port, Seq: seq}, nil)
	for range 5 {
		time.Sleep(2 * time.Millisecond)
		if err := l.Send(end); err != nil {
			return fmt.Errorf("send end marker: %w", err)
		}
	}
	how := fmt.Sprintf("link.SendBatch, batch %d", o.batch)
	if o.zeroCopy {
		how = fmt.Sprintf("link.TxSlot/TxCommit/Flush, batch %d", o.batch)
	}
	st := result.Stream{
		Tool: "egm-linkperf", Mode: "stream-send", Frames: uint64(seq), FrameLen: wire.EthHeaderLen + o.size,
		EthPayload: o.size, AppPayload: plen, Seconds: elapsed.Seconds(), Sent: uint64(seq),
		Note:  fmt.Sprintf("%s, QdiscBypass, payloads from a %d-byte message; ErrTxBusy %d times", how, len(msg), busy),
		Extra: statsNote(l),
	}
	st.Goodput()
	return result.Print(os.Stdout, st)
}

// sendInPlace builds up to o.batch frames directly in TX-ring slots,
// starting with sequence number seq, each with the payload next returns,
// and flushes them. It returns how many it queued (fewer when the ring is
// full).
func sendInPlace(l *link.Link, o *options, src [6]byte, fields *wire.HeaderFields, seq uint32, next func() []byte) (int, error) {
	n := 0
	for n < o.batch {
		slot := l.TxSlot()
		if slot == nil {
			break
		}
		fields.Seq = seq + uint32(n)
		f := wire.AppendFrame(slot[:0], o.Peer, src, wire.EtherType, fields, next())
		if err := l.TxCommit(len(f)); err != nil {
			return n, fmt.Errorf("commit TX slot: %w", err)
		}
		n++
	}
	if err := l.Flush(); err != nil && !errors.Is(err, link.ErrTxBusy) {
		return n, fmt.Errorf("flush: %w", err)
	}
	return n, nil
}

// streamRecv counts data frames until an end marker arrives (or o.Timeout
// without frames) and prints a result.Stream record.
func streamRecv(o *options) error {
	l, err := openLink(o, false)
	if err != nil {
		return err
	}
	defer l.Close()
	r := newReceiver(l, o.wait)
	idle := ctl.NewIdle(ctl.StopFlag(), o.Timeout, o.wait)
	ctl.Ready()
	var (
		q           result.Seqs
		frames      uint64
		sent        uint64
		flen, plen  int
		first, last time.Time
	)
loop:
	for {
		got, hdrs, err := r.recv(100 * time.Millisecond)
		if err != nil {
			return fmt.Errorf("receiver: %w", err)
		}
		if len(got) == 0 {
			if idle.Over() {
				break
			}
			continue
		}
		now := time.Now()
		idle.Seen(now)
		for i, h := range hdrs {
			if h.PayloadLen() == 0 {
				sent = uint64(h.Seq())
				break loop
			}
			if frames == 0 {
				first = now
				flen, plen = wire.FrameLen(got[i]), h.PayloadLen()
			}
			frames++
			last = now
			q.Add(uint64(h.Seq()))
		}
	}
	if idle.Err != nil {
		return idle.Err
	}
	q.End(sent)
	st := result.Stream{
		Tool: "egm-linkperf", Mode: "stream-recv", Frames: frames, FrameLen: flen,
		EthPayload: flen - wire.EthHeaderLen, AppPayload: plen, Seconds: last.Sub(first).Seconds(),
		Gaps: q.Gaps, OutOfOrder: q.OutOfOrder, KernelDrops: l.Stats().KernelDrops, Sent: sent,
		Note:  "receiver: " + map[bool]string{false: "link.Recv polling", true: "link.Wait"}[o.wait] + "; goodput counted at the receiver, first to last frame",
		Extra: statsNote(l),
	}
	st.Goodput()
	return result.Print(os.Stdout, st)
}
