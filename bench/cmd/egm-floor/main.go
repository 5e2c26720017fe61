//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/ethergm/ethergm/bench/internal/ctl"
	"github.com/ethergm/ethergm/bench/internal/result"
)

// Payload layout: magic, kind, sequence number; the rest is zero.
const (
	etherType  = 0x88B5
	ethHdrLen  = 14
	offMagic   = ethHdrLen
	offKind    = ethHdrLen + 4
	offSeq     = ethHdrLen + 8
	minPayload = 16
	magic      = "EGMF"

	kindPing byte = 1
	kindPong byte = 2
	kindData byte = 3
	kindEnd  byte = 4
)

type options struct {
	ctl.Run
	ctl.Ether
	stream    bool
	size      int
	blockSize int
	blocks    int
	tov       int
	txFrames  int
	vnet      bool
	batch     int
	bypass    bool
}

func main() {
	var o options
	flag.BoolVar(&o.stream, "stream", false, "one-way streaming instead of ping-pong")
	flag.IntVar(&o.size, "size", 0, "Ethernet payload bytes per frame (default 64 for ping-pong, 1500 for -stream)")
	flag.IntVar(&o.blockSize, "block", 1<<20, "RX ring block size")
	flag.IntVar(&o.blocks, "blocks", 16, "RX ring blocks")
	flag.IntVar(&o.tov, "tov", 1, "RX ring block retire timeout, ms")
	flag.IntVar(&o.txFrames, "txframes", 256, "TX ring slots (-stream sender)")
	flag.IntVar(&o.batch, "batch", 64, "frames per TX ring kick (-stream sender)")
	flag.BoolVar(&o.vnet, "vnet", true, "PACKET_VNET_HDR on the -stream sender's TX ring, frames up to 16384 bytes copied whole into the socket buffer, as gm/link does (-vnet=false: the ring pages as fragments)")
	flag.BoolVar(&o.bypass, "bypass", false, "PACKET_QDISC_BYPASS for ping-pong (always on for the stream sender)")
	o.Run.Flags()
	o.Ether.Flags()
	flag.Parse()

	if err := o.ParsePeer(); err != nil {
		fatal(err)
	}
	if o.size == 0 {
		o.size = 64
		if o.stream {
			o.size = 1500
		}
	}
	if maxSize := maxTxSlot - txDataOff - vnetHdrLen - ethHdrLen; o.size < minPayload || o.size > maxSize {
		fatal(fmt.Errorf("-size %d out of range [%d, %d]", o.size, minPayload, maxSize))
	}
	if err := o.Role(); err != nil {
		fatal(err)
	}
	if runtime.GOARCH != "amd64" {
		fatal(errOpenBlockArch)
	}
	var err error
	switch {
	case o.stream && o.Server:
		err = streamRecv(&o)
	case o.stream:
		err = streamSend(&o)
	case o.Server:
		err = pingServer(&o)
	default:
		err = pingClient(&o)
	}
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "egm-floor: %v\n", err)
	os.Exit(1)
}

// buildFrame writes an Ethernet header and the payload header into f.
func buildFrame(f []byte, dst [6]byte, src []byte, kind byte, seq uint64) {
	copy(f[0:6], dst[:])
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:14], etherType)
	copy(f[offMagic:], magic)
	f[offKind] = kind
	binary.BigEndian.PutUint64(f[offSeq:], seq)
}

func parse(f []byte) (kind byte, seq uint64, ok bool) {
	if len(f) < offSeq+8 || string(f[offMagic:offMagic+4]) != magic {
		return 0, 0, false
	}
	return f[offKind], binary.BigEndian.Uint64(f[offSeq:]), true
}

// openRx opens a socket with an RX ring for frames of o.size bytes of
// payload, and returns a buffer for one such frame; bypass sets
// PACKET_QDISC_BYPASS for its sends.
func openRx(o *options, bypass bool) (*sock, *rxRing, []byte, error) {
	s, err := open(o.Iface, etherType, o.blockSize, o.blocks, o.tov, 0, 0, bypass, false)
	if err != nil {
		return nil, nil, nil, err
	}
	frameLen := ethHdrLen + o.size
	return s, newRxRing(s.mem, o.blockSize, o.blocks, frameLen), make([]byte, frameLen), nil
}

// pingServer echoes every ping back to its sender until SIGINT/SIGTERM.
func pingServer(o *options) error {
	s, ring, reply, err := openRx(o, o.bypass)
	if err != nil {
		return err
	}
	defer s.close()
	stop := ctl.StopFlag()
	ctl.Ready()
	for !stop.Load() {
		f := ring.next()
		if f == nil {
			continue
		}
		kind, _, ok := parse(f)
		if !ok || kind != kindPing {
			return fmt.Errorf("server: unexpected frame (kind %d, valid %v): wrong -size?", kind, ok)
		}
		copy(reply, f)
		copy(reply[0:6], f[6:12])
		copy(reply[6:12], s.mac)
		reply[offKind] = kindPong
		if err := s.send(reply); err != nil {
			return fmt.Errorf("send: %w", err)
		}
	}
	return nil
}

// pingClient runs warm-up and measured round trips and prints a
// result.Latency record. A request without a reply within 200 ms (warm-up:
// the server may not be up yet) or o.Timeout is sent again; such round
// trips are not measured.
func pingClient(o *options) error {
	s, ring, req, err := openRx(o, o.bypass)
	if err != nil {
		return err
	}
	defer s.close()
	pings := result.NewPings(o.N, o.Warmup)
	rs := ctl.NewResender(ctl.StopFlag(), o.Timeout)
	var seq uint64
	for i := 0; i < o.Warmup+o.N; i++ {
		seq++
		buildFrame(req, o.Peer, s.mac, kindPing, seq)
		rs.Sent(time.Now(), ctl.ResendPeriod(i, o.Warmup, o.Timeout))
		t0 := time.Now()
		if err := s.send(req); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		for spins := 0; ; spins++ {
			f := ring.next()
			if f == nil {
				if spins&1023 == 0 {
					if err := rs.Resend(s.send, req); err != nil {
						return fmt.Errorf("seq %d: %w", seq, err)
					}
				}
				continue
			}
			kind, got, ok := parse(f)
			if !ok || kind != kindPong {
				return fmt.Errorf("client: unexpected frame (kind %d, valid %v)", kind, ok)
			}
			if got == seq {
				break
			}
			if got > seq {
				return fmt.Errorf("reply seq %d ahead of request %d", got, seq)
			}
			// An older reply (duplicate after a resend): skip it.
		}
		pings.Add(i, time.Since(t0), rs.Retried)
	}
	pings.Retries = rs.Requests
	l := pings.Latency("egm-floor", "pingpong", o.size)
	l.Note = "V3 RX ring open-block busy-poll, send(2), no protocol, no CRC"
	return result.Print(os.Stdout, l)
}

// streamSend sends full frames through a TX ring with PACKET_QDISC_BYPASS
// for o.Duration, then a few end markers carrying the frame count.
func streamSend(o *options) error {
	frameLen := ethHdrLen + o.size
	slotSize := txSlotFor(frameLen, o.vnet)
	s, err := open(o.Iface, etherType, 0, 0, 0, o.txFrames, slotSize, true, o.vnet)
	if err != nil {
		return err
	}
	defer s.close()
	tx := newTxRing(s.mem, slotSize, o.vnet)
	src := make([]byte, frameLen)
	buildFrame(src, o.Peer, s.mac, kindData, 0)
	var seq uint64
	until := ctl.NewDeadline(ctl.StopFlag(), o.Duration)
	for !until.Done() {
		for range o.batch {
			slot, err := tx.slot()
			if err != nil {
				return err
			}
			if slot == nil {
				break
			}
			binary.BigEndian.PutUint64(src[offSeq:], seq)
			copy(slot, src)
			tx.commit(frameLen)
			seq++
		}
		if err := s.kick(); err != nil {
			return fmt.Errorf("TX ring kick: %w", err)
		}
	}
	// Let the ring drain before the end markers, so they arrive last.
	for i := 0; i < 1000; i++ {
		if err := s.kick(); err != nil {
			return err
		}
		if slot, _ := tx.slot(); slot != nil && tx.idle() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(until.Start)
	vnetNote := ""
	if tx.vnet > 0 {
		vnetNote = ", PACKET_VNET_HDR"
	}
	end := make([]byte, tx.vnet+frameLen)
	buildFrame(end[tx.vnet:], o.Peer, s.mac, kindEnd, seq)
	if tx.vnet > 0 {
		vnetHeader(end, frameLen) // send(2) on the socket takes one too
	}
	for range 5 {
		if err := s.send(end); err != nil {
			return fmt.Errorf("send end marker: %w", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	st := result.Stream{
		Tool: "egm-floor", Mode: "stream-send", Frames: seq, FrameLen: frameLen,
		EthPayload: o.size, AppPayload: o.size, Seconds: elapsed.Seconds(), Sent: seq,
		Note: fmt.Sprintf("V3 TX ring, %d slots, batch %d, PACKET_QDISC_BYPASS%s", tx.frames, o.batch, vnetNote),
	}
	st.Goodput()
	return result.Print(os.Stdout, st)
}

// streamRecv busy-polls the RX ring, counts data frames and sequence gaps,
// and prints a result.Stream when the end marker arrives (or after
// o.Timeout without frames once the stream has started).
func streamRecv(o *options) error {
	frameLen := ethHdrLen + o.size
	s, ring, _, err := openRx(o, false)
	if err != nil {
		return err
	}
	defer s.close()
	idle := ctl.NewIdle(ctl.StopFlag(), o.Timeout, false)
	ctl.Ready()
	var (
		q           result.Seqs
		frames      uint64
		sent        uint64
		first, last time.Time
	)
loop:
	for {
		f := ring.next()
		if f == nil {
			if idle.Over() {
				break
			}
			continue
		}
		now := time.Now()
		idle.Seen(now)
		kind, seq, ok := parse(f)
		if !ok {
			return errors.New("receiver: unexpected frame: wrong -size?")
		}
		switch kind {
		case kindData:
			if frames == 0 {
				first = now
			}
			frames++
			last = now
			q.Add(seq)
		case kindEnd:
			sent = seq
			break loop
		default:
			return fmt.Errorf("receiver: unexpected frame kind %d", kind)
		}
	}
	if idle.Err != nil {
		return idle.Err
	}
	q.End(sent)
	st := result.Stream{
		Tool: "egm-floor", Mode: "stream-recv", Frames: frames, FrameLen: frameLen,
		EthPayload: o.size, AppPayload: o.size, Seconds: last.Sub(first).Seconds(),
		Gaps: q.Gaps, OutOfOrder: q.OutOfOrder, KernelDrops: s.drops(), Sent: sent,
		Note: "V3 RX ring open-block busy-poll; goodput counted at the receiver, first to last frame",
	}
	st.Goodput()
	return result.Print(os.Stdout, st)
}
