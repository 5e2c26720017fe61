package nemesis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// streamKey names a stream: a sending incarnation's messages to one host at
// one priority.
type streamKey struct {
	inc uint32
	dst int
	pri int
}

// delivery is one message a receiving incarnation reported.
type delivery struct {
	rinc uint32
	seq  uint64
}

type completion struct {
	st gm.Status
	at time.Time
}

// faultSpan is a fault as it happened: what, to whom, from when to when
// (zero end: not undone yet).
type faultSpan struct {
	f          fault
	start, end time.Time
}

// checker holds what the processes reported and the faults done, and
// decides whether every stream kept GM's contract. Its methods are safe for
// concurrent use.
type checker struct {
	mu         sync.Mutex
	sendPort   int
	ids        map[int]int // host index -> node id, from the first map
	senders    map[uint32]*peerProc
	receivers  map[int][]*peerProc // host -> incarnations, in order
	dels       map[streamKey][]delivery
	comps      map[streamKey]map[uint64]completion
	counts     map[[3]int]int // (src, dst, pri) -> messages delivered
	failed     map[gm.Status]int
	delivered  int
	faults     []*faultSpan
	start      time.Time // the schedule's start
	violations []string
	// openRetries are the incarnations whose port opened only after
	// failed attempts (logged; line judges them against the rail cuts).
	openRetries []string
	// window bounds how long before a failed completion a fault of the
	// stream may have happened to explain it, per status.
	window map[gm.Status]time.Duration
}

func newChecker(sendPort int, ids map[int]int, window map[gm.Status]time.Duration) *checker {
	return &checker{sendPort: sendPort, ids: ids, window: window, senders: map[uint32]*peerProc{}, receivers: map[int][]*peerProc{},
		dels: map[streamKey][]delivery{}, comps: map[streamKey]map[uint64]completion{}, counts: map[[3]int]int{}, failed: map[gm.Status]int{}}
}

func (c *checker) violate(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violateLocked(format, args...)
}

func (c *checker) violateLocked(format string, args ...any) {
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

func (c *checker) addSender(p *peerProc) {
	c.mu.Lock()
	c.senders[p.inc] = p
	c.mu.Unlock()
}

func (c *checker) addReceiver(p *peerProc) {
	c.mu.Lock()
	c.receivers[p.host] = append(c.receivers[p.host], p)
	c.mu.Unlock()
}

// line takes one output line of incarnation p.
func (c *checker) line(p *peerProc, l string) {
	f := strings.Fields(l)
	num := func(i int) uint64 {
		if i >= len(f) {
			return 1<<64 - 1
		}
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 1<<64 - 1
		}
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(f) == 0:
	case f[0] == "D" && p.role == "recv" && len(f) == 7:
		inc, pri, seq, src, node, sport := uint32(num(1)), int(num(2)), num(3), int(num(4)), int(num(5)), int(num(6))
		s := c.senders[inc]
		switch {
		case s == nil || s.host != src:
			c.violateLocked("%v got message %d of incarnation %d from host%d, which no sender of host%d is", p, seq, inc, src, src)
		case node != c.ids[src]:
			c.violateLocked("%v got message %d of %v with sender node id %d, host%d is node %d", p, seq, s, node, src, c.ids[src])
		case sport != c.sendPort:
			c.violateLocked("%v got message %d of %v from port %d, want %d", p, seq, s, sport, c.sendPort)
		}
		k := streamKey{inc, p.host, pri}
		c.dels[k] = append(c.dels[k], delivery{p.inc, seq})
		c.counts[[3]int{src, p.host, pri}]++
		c.delivered++
	case f[0] == "C" && p.role == "send" && len(f) == 5:
		k := streamKey{p.inc, int(num(1)), int(num(2))}
		seq, st := num(3), gm.Status(num(4))
		m := c.comps[k]
		if m == nil {
			m = map[uint64]completion{}
			c.comps[k] = m
		}
		if prev, dup := m[seq]; dup {
			c.violateLocked("%v: message %d to host%d priority %d completed twice (%s, then %s)", p, seq, k.dst, k.pri, prev.st.String(), st.String())
		}
		m[seq] = completion{st, time.Now()}
		if st != gm.Success {
			c.failed[st]++
		}
	case f[0] == "F" && p.role == "send" && len(f) == 4:
		p.submitted[[2]int{int(num(1)), int(num(2))}] = num(3)
	case f[0] == "FINISHED":
		p.finished = true
	case f[0] == "G":
		p.debug = append(p.debug, l[2:])
	case f[0] == "O":
		c.openRetries = append(c.openRetries, fmt.Sprintf("%v: %s", p, l))
		// A unit opens while one of its rails is up: only a cut of all
		// of them explains retries for a down interface. The attempts
		// took 100 ms each; the window is wider by the slack of the
		// process start.
		now := time.Now()
		from := now.Add(-time.Duration(num(1))*100*time.Millisecond - openSlack)
		if strings.Contains(l, "is down") && !c.allRailsCutLocked(p.host, from, now) {
			c.violateLocked("%v: its port opened only after %d tries (%s), although a rail of host%d was up all along", p, num(1), l[2:], p.host)
		}
	case f[0] == "M" && len(f) == 3:
		p.mem = append(p.mem, [2]uint64{num(1), num(2)})
	default:
		c.violateLocked("%v: %s", p, l)
	}
}

// openSlack widens the window of a port's failed opens (see line).
const openSlack = 2 * time.Second

// allRailsCutLocked reports whether, at some instant of [from, to], both
// rails of host h (the nemesis' hosts have two) were cut (a cutRail span,
// from before the link went down to after it came up again, covered it).
func (c *checker) allRailsCutLocked(h int, from, to time.Time) bool {
	var cuts [2][]*faultSpan
	for _, s := range c.faults {
		if s.f.Kind == cutRail && s.f.Hosts[0] == h && s.f.Rail < len(cuts) {
			cuts[s.f.Rail] = append(cuts[s.f.Rail], s)
		}
	}
	end := func(s *faultSpan) time.Time {
		if s.end.IsZero() {
			return to
		}
		return s.end
	}
	for _, a := range cuts[0] {
		for _, b := range cuts[1] {
			lo := max(a.start.UnixNano(), b.start.UnixNano(), from.UnixNano())
			hi := min(end(a).UnixNano(), end(b).UnixNano(), to.UnixNano())
			if lo <= hi {
				return true
			}
		}
	}
	return false
}

// explained reports whether a fault touching stream src -> dst, fit to
// explain status st, overlapped the window before at.
func (c *checker) explained(src, dst int, st gm.Status, at time.Time) bool {
	from := at.Add(-c.window[st])
	for _, s := range c.faults {
		if s.start.After(at) || !s.end.IsZero() && s.end.Before(from) {
			continue
		}
		in := func(h int) bool { return slices.Contains(s.f.Hosts, h) }
		switch s.f.Kind {
		case killRecv:
			if in(dst) {
				return true
			}
		case cutRail, impair:
			if st != gm.SendTargetPortClosed && (in(src) || in(dst)) {
				return true
			}
		case partition:
			if st != gm.SendTargetPortClosed && in(src) != in(dst) {
				return true
			}
		}
	}
	return false
}

// check runs the checks that need the whole run: call it after every
// process reported all it will.
func (c *checker) check() {
	c.mu.Lock()
	defer c.mu.Unlock()
	allowed := map[gm.Status]bool{gm.SendTargetPortClosed: true, gm.SendTargetNodeUnreachable: true, gm.SendTimedOut: true}
	keys := map[streamKey]bool{}
	for k := range c.dels {
		keys[k] = true
	}
	for k := range c.comps {
		keys[k] = true
	}
	for k := range keys {
		s := c.senders[k.inc]
		if s == nil {
			continue // reported already
		}
		comps := c.comps[k]
		name := fmt.Sprintf("stream host%d inc %d -> host%d priority %d", s.host, k.inc, k.dst, k.pri)
		// Exactly once, in order within a receiving incarnation, no gap
		// but failed sends.
		where := map[uint64]uint32{}
		last := map[uint32]uint64{}
		first := map[uint32]uint64{}
		for _, d := range c.dels[k] {
			if r, dup := where[d.seq]; dup {
				c.violateLocked("%s: message %d delivered twice (receiving incarnations %d and %d)", name, d.seq, r, d.rinc)
				continue
			}
			where[d.seq] = d.rinc
			if prev, ok := last[d.rinc]; ok {
				if d.seq < prev {
					c.violateLocked("%s: message %d delivered after %d (receiving incarnation %d)", name, d.seq, prev, d.rinc)
				}
				for g := prev + 1; g < d.seq; g++ {
					cp, ok := comps[g]
					switch {
					case ok && cp.st == gm.Success:
						c.violateLocked("%s: message %d skipped (between %d and %d at receiving incarnation %d) but completed with success", name, g, prev, d.seq, d.rinc)
					case !ok && !s.killed.Load():
						c.violateLocked("%s: message %d skipped (between %d and %d at receiving incarnation %d), its send not completed", name, g, prev, d.seq, d.rinc)
					}
				}
			} else {
				first[d.rinc] = d.seq
			}
			last[d.rinc] = d.seq
		}
		// Every success delivered, unless to a receiving incarnation
		// killed between taking it and reporting it.
		incs := c.receivers[k.dst]
		for seq, cp := range comps {
			if cp.st == gm.Success {
				if _, ok := where[seq]; ok {
					continue
				}
				lost := false
				for i, r := range incs {
					if !r.killed.Load() {
						continue
					}
					if l, ok := last[r.inc]; ok && l > seq {
						continue
					}
					next := uint64(1<<64 - 1)
					for _, r2 := range incs[i+1:] {
						if f, ok := first[r2.inc]; ok {
							next = f
							break
						}
					}
					if seq < next {
						lost = true
						break
					}
				}
				if !lost {
					c.violateLocked("%s: message %d completed with success but was never delivered", name, seq)
				}
				continue
			}
			if !allowed[cp.st] {
				c.violateLocked("%s: message %d completed with %s", name, seq, cp.st.String())
			} else if !c.explained(s.host, k.dst, cp.st, cp.at) {
				c.violateLocked("%s: message %d completed with %s at %v (%v into the schedule), and no fault of the stream explains it",
					name, seq, cp.st.String(), cp.at.Format("15:04:05.000"), cp.at.Sub(c.start).Round(time.Millisecond))
			}
		}
	}
	// No send left without a completion by a sender that finished.
	for _, s := range c.senders {
		if !s.finished {
			continue
		}
		for sk, n := range s.submitted {
			comps := c.comps[streamKey{s.inc, sk[0], sk[1]}]
			for seq := uint64(0); seq < n; seq++ {
				if _, ok := comps[seq]; !ok {
					c.violateLocked("%v: message %d to host%d priority %d never completed", s, seq, sk[0], sk[1])
				}
			}
		}
	}
	// Memory and goroutines flat over each incarnation's life (its first
	// samples are taken at start-up).
	for _, list := range [][]*peerProc{c.all()} {
		for _, p := range list {
			if len(p.mem) < 4 {
				continue
			}
			base := p.mem[1]
			for _, m := range p.mem[2:] {
				if m[0] > base[0]+64<<20 || m[1] > base[1]+16 {
					c.violateLocked("%v: heap in use %d KiB and %d goroutines, was %d KiB and %d", p, m[0]>>10, m[1], base[0]>>10, base[1])
					break
				}
			}
		}
	}
}

// all returns every incarnation.
func (c *checker) all() []*peerProc {
	var all []*peerProc
	for _, s := range c.senders {
		all = append(all, s)
	}
	for _, rs := range c.receivers {
		all = append(all, rs...)
	}
	return all
}
