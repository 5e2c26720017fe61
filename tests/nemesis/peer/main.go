// Command peer is the nemesis test's sending or receiving process (package
// tests/nemesis runs it in netns hosts and kills it at will). It speaks to
// the test through its standard streams only, one line per fact:
//
//	recv: "READY", then "D inc pri seq src node sport" per verified message
//	      (sender incarnation, priority, sequence number, sending host
//	      index, the event's sender node id and port), "E reason" for a
//	      message that fails verification.
//	send: "READY", "C dst pri seq status" per completion, and after "stop"
//	      (or the end of standard input) "F dst pri submitted" per stream
//	      and "FINISHED" once every send has completed; after "debug",
//	      "G line" for each line of its streams' and its port's state.
//	both: "M heap goroutines" every two seconds, "O tries error" when the
//	      port opened only after tries failed attempts, "X error" for an
//	      unexpected API error.
//
// Every message carries a header naming its stream, sequence number and
// destination, and a filler derived from them, so that the receiver checks
// each message it gets against what the sender built.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// Message header layout (big-endian).
const (
	magic     = 0x4E454D31 // "NEM1"
	headerLen = 24
	minSize   = 5 // MaxLengthForSize(5) == headerLen
)

var out struct {
	mu sync.Mutex
	b  []byte
}

// say writes one line in one write (atomic on a pipe up to PIPE_BUF).
func say(format string, args ...any) {
	out.mu.Lock()
	out.b = fmt.Appendf(out.b[:0], format, args...)
	out.b = append(out.b, '\n')
	os.Stdout.Write(out.b)
	out.mu.Unlock()
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peer send|recv [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	unit := fs.String("unit", "eth0", "the GM unit")
	host := fs.String("host", "", "this host's name")
	index := fs.Int("index", 0, "this host's index (hostN)")
	stateDir := fs.String("state-dir", "", "the state directory")
	port := fs.Int("port", 2, "the port to open")
	inc := fs.Uint("inc", 0, "this incarnation's number (send)")
	targets := fs.String("targets", "", "comma-separated host indexes to send to (send)")
	targetPort := fs.Int("target-port", 4, "the receivers' port (send)")
	rate := fs.Float64("rate", 10, "messages per second per stream (send)")
	window := fs.Int("window", 3, "sends outstanding per stream at most (send)")
	maxSize := fs.Int("max-size", 13, "the largest size class")
	liveness := fs.Duration("liveness", 4*time.Second, "Config.LivenessTimeout")
	progress := fs.Duration("progress", 20*time.Second, "Config.ProgressTimeout")
	fs.Parse(os.Args[2:])

	cfg := &gm.Config{Host: *host, StateDir: *stateDir, LivenessTimeout: *liveness, ProgressTimeout: *progress, MapPoll: 100 * time.Millisecond}
	// A unit opens while one of its rails is up; with every rail down it
	// does not (gm/link refuses an interface that is down): a process
	// restarted while every rail of its host is cut retries, as a program
	// under a supervisor would, and says so (the checker holds the
	// retries against the rail cuts on record).
	var p *gm.Port
	var err error
	var last string
	for tries := 0; ; tries++ {
		p, err = gm.Open(*unit, *port, "nemesis-"+os.Args[1], cfg)
		if err == nil {
			if tries > 0 {
				say("O %d %v", tries, strings.ReplaceAll(last, "\n", " "))
			}
			break
		}
		last = err.Error()
		if tries == 600 {
			say("X open: %v", err)
			os.Exit(1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	go stats()
	switch os.Args[1] {
	case "recv":
		recv(p, *index, *port, uint8(*maxSize))
	case "send":
		var dsts []int
		for f := range strings.SplitSeq(*targets, ",") {
			d, err := strconv.Atoi(f)
			if err != nil {
				say("X bad target %q", f)
				os.Exit(2)
			}
			dsts = append(dsts, d)
		}
		send(p, uint32(*inc), *index, dsts, *targetPort, *rate, *window, uint8(*maxSize))
	default:
		say("X unknown mode %q", os.Args[1])
		os.Exit(2)
	}
}

func stats() {
	for {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		say("M %d %d", ms.HeapInuse, runtime.NumGoroutine())
		time.Sleep(2 * time.Second)
	}
}

// shape returns the size class and length of message seq of a stream: most
// are small (one frame), some span several frames.
func shape(inc uint32, seq uint64, dst int, pri gm.Priority, maxSize uint8) (uint8, int) {
	h := mix(uint64(inc)<<40 ^ seq<<8 ^ uint64(dst)<<1 ^ uint64(pri))
	size := uint8(minSize + h%3) // 5..7: up to 120 bytes
	if h>>8%4 == 0 {
		size = uint8(minSize + h>>16%uint64(maxSize-minSize+1))
	}
	lo := headerLen
	if size > minSize {
		lo = max(lo, gm.MaxLengthForSize(size-1)+1)
	}
	hi := gm.MaxLengthForSize(size)
	return size, lo + int(h>>32%uint64(hi-lo+1))
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// fill writes message seq of stream (inc, src -> dst:dport, pri) into b.
func fill(b []byte, inc uint32, seq uint64, src, dst, dport int, pri gm.Priority) {
	binary.BigEndian.PutUint32(b[0:], magic)
	binary.BigEndian.PutUint32(b[4:], inc)
	binary.BigEndian.PutUint64(b[8:], seq)
	binary.BigEndian.PutUint16(b[16:], uint16(src))
	binary.BigEndian.PutUint16(b[18:], uint16(dst))
	b[20] = byte(dport)
	b[21] = byte(pri)
	binary.BigEndian.PutUint16(b[22:], uint16(len(b)))
	x := mix(uint64(inc)<<32 ^ seq)
	for i := headerLen; i < len(b); i++ {
		b[i] = byte(x >> (8 * (i % 8)))
		if i%8 == 7 {
			x = mix(x)
		}
	}
}

func recv(p *gm.Port, self, port int, maxSize uint8) {
	for pri := gm.LowPriority; pri <= gm.HighPriority; pri++ {
		for size := uint8(minSize); size <= maxSize; size++ {
			n := 14
			if size > 9 {
				n = 10
			}
			for range n {
				if err := p.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, pri, 0); err != nil {
					say("X provide: %v", err)
					os.Exit(1)
				}
			}
		}
	}
	say("READY")
	want := make([]byte, gm.MaxLengthForSize(maxSize))
	for {
		e := p.BlockingReceive()
		if !e.Type.IsRecv() {
			p.Unknown(e)
			continue
		}
		msg := e.Message
		switch {
		case len(msg) < headerLen || binary.BigEndian.Uint32(msg) != magic:
			say("E short or foreign message of %d bytes from %d:%d", len(msg), e.SenderNode, e.SenderPort)
		default:
			inc := binary.BigEndian.Uint32(msg[4:])
			seq := binary.BigEndian.Uint64(msg[8:])
			src := int(binary.BigEndian.Uint16(msg[16:]))
			dst := int(binary.BigEndian.Uint16(msg[18:]))
			size, length := shape(inc, seq, dst, gm.Priority(msg[21]), maxSize)
			w := want[:length]
			if length == len(msg) {
				fill(w, inc, seq, src, dst, int(msg[20]), gm.Priority(msg[21]))
			}
			switch {
			case dst != self || int(msg[20]) != port:
				say("E message inc %d seq %d for host%d port %d reached host%d port %d", inc, seq, dst, msg[20], self, port)
			case gm.Priority(msg[21]) != e.Priority:
				say("E message inc %d seq %d of priority %d arrived at priority %d", inc, seq, msg[21], e.Priority)
			case e.Size != size || len(msg) != length || e.Length != length:
				say("E message inc %d seq %d: size %d length %d, want %d %d", inc, seq, e.Size, len(msg), size, length)
			case string(msg) != string(w):
				say("E message inc %d seq %d changed", inc, seq)
			default:
				say("D %d %d %d %d %d %d", inc, e.Priority, seq, src, e.SenderNode, e.SenderPort)
			}
		}
		if err := p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag); err != nil {
			say("X provide: %v", err)
			os.Exit(1)
		}
	}
}

// stream is one (target, priority) stream of the sender.
type stream struct {
	dst      int
	host     string
	pri      gm.Priority
	next     uint64 // next sequence number
	inflight int
	failures int // error completions not resumed yet
	resumeAt time.Time
	node     gm.NodeID
	due      time.Time
	bufs     [][]byte
}

type sendCtx struct {
	s   *stream
	seq uint64
	buf []byte
}

func send(p *gm.Port, inc uint32, self int, dsts []int, dport int, rate float64, window int, maxSize uint8) {
	var stop, debug atomic.Bool
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "stop" {
				break
			}
			if sc.Text() == "debug" {
				debug.Store(true)
			}
		}
		stop.Store(true)
	}()
	var streams []*stream
	for _, d := range dsts {
		for pri := gm.LowPriority; pri <= gm.HighPriority; pri++ {
			streams = append(streams, &stream{dst: d, host: fmt.Sprintf("host%d", d), pri: pri, node: gm.NoSuchNodeID})
		}
	}
	cb := func(_ *gm.Port, ctx any, st gm.Status) {
		c := ctx.(*sendCtx)
		s := c.s
		s.inflight--
		s.bufs = append(s.bufs, c.buf)
		if st != gm.Success && st != gm.SendDropped {
			// Resume a little later: a target that is down would
			// otherwise fail the stream again at once, in a loop.
			s.failures++
			s.resumeAt = time.Now().Add(200 * time.Millisecond)
		}
		say("C %d %d %d %d", s.dst, s.pri, c.seq, int(st))
	}
	interval := time.Duration(float64(time.Second) / rate)
	ready := false
	for {
		if e := p.Receive(); e.Type != gm.NoRecvEvent {
			p.Unknown(e)
			continue
		}
		if !ready && p.NodeID() != gm.NoSuchNodeID {
			ready = true
			say("READY")
		}
		if debug.Swap(false) {
			for _, s := range streams {
				say("G stream to %s priority %d: next %d, in flight %d, failures %d, node %d", s.host, s.pri, s.next, s.inflight, s.failures, s.node)
			}
			for l := range strings.Lines(p.DebugState()) {
				say("G %s", strings.TrimRight(l, "\n"))
			}
		}
		now := time.Now()
		stopping := stop.Load()
		busy := false
		for _, s := range streams {
			for s.failures > 0 && !now.Before(s.resumeAt) {
				err := p.ResumeSending(s.pri, s.node, dport, nil, nil)
				if err != nil {
					if !errors.Is(err, gm.ErrNoSendToken) && !errors.Is(err, gm.ErrUnknownNode) {
						say("X resume to %s: %v", s.host, err)
					}
					break
				}
				s.failures--
			}
			if s.inflight > 0 || s.failures > 0 {
				busy = true
			}
			if stopping || !ready || s.inflight >= window || now.Before(s.due) {
				continue
			}
			if s.failures > 0 {
				continue // resumed once the tokens allow
			}
			node, err := p.HostNameToNodeID(s.host)
			if err != nil {
				continue // not in the map (yet, or during a partition)
			}
			size, length := shape(inc, s.next, s.dst, s.pri, maxSize)
			var b []byte
			if n := len(s.bufs); n > 0 {
				b, s.bufs = s.bufs[n-1], s.bufs[:n-1]
			}
			if cap(b) < length {
				b = make([]byte, gm.MaxLengthForSize(maxSize))
			}
			b = b[:length]
			fill(b, inc, s.next, self, s.dst, dport, s.pri)
			c := &sendCtx{s: s, seq: s.next, buf: b}
			err = p.SendWithCallback(b, size, length, s.pri, node, dport, cb, c)
			switch {
			case err == nil:
				s.node = node
				s.next++
				s.inflight++
				busy = true
				if s.due.Before(now.Add(-time.Second)) {
					s.due = now
				}
				s.due = s.due.Add(interval)
			case errors.Is(err, gm.ErrNoSendToken), errors.Is(err, gm.ErrUnknownNode), errors.Is(err, gm.NodeIDNotYetSet):
				s.bufs = append(s.bufs, b)
			default:
				s.bufs = append(s.bufs, b)
				say("X send to %s: %v", s.host, err)
			}
		}
		if stopping && !busy {
			for _, s := range streams {
				say("F %d %d %d", s.dst, s.pri, s.next)
			}
			say("FINISHED")
			p.Close()
			os.Exit(0)
		}
		time.Sleep(time.Millisecond)
	}
}
