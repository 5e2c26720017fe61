package link

import (
	"time"

	"golang.org/x/sys/unix"
)

// MultiWait sleeps on several Links at once (the rails of a multi-rail
// unit): one poll(2) covers every Link's eventfd, ring socket and doorbell.
// It is the several-Link form of Link.Wait and follows the same contract:
// while a MultiWait.Wait runs it owns the reader side of every one of its
// Links (it holds their receive locks), Link.Wake on any of them makes it
// return early, and Link.Close on any of them makes it return ErrClosed.
// A MultiWait is used by one goroutine at a time.
type MultiWait struct {
	links []*Link
	pfds  []unix.PollFd
	owner []int   // Link index of each pfds entry
	kind  []uint8 // pfdEvent, pfdRing or pfdDoorbell
	ts    unix.Timespec
	next  int // Link read first by the next call (round robin)
}

// Kinds of MultiWait poll entries (the order of Link.pfds).
const (
	pfdEvent    = 0
	pfdRing     = 1
	pfdDoorbell = 2
)

// NewMultiWait returns a MultiWait over links (at least one, all open).
func NewMultiWait(links ...*Link) *MultiWait {
	m := &MultiWait{links: links}
	for i, l := range links {
		for j := 0; j < l.npfd; j++ {
			m.pfds = append(m.pfds, l.pfds[j])
			m.owner = append(m.owner, i)
			m.kind = append(m.kind, uint8(j))
		}
	}
	return m
}

// Wait waits until one of the Links has frames, one of them is woken
// (Wake), timeout passes or one of them is closed. It returns (n, i, nil)
// with n > 0 frames of Link i (views valid until the next Recv or Wait on
// Link i), (0, -1, nil) on timeout or Wake, and (0, i, ErrClosed) if Link i
// is or gets closed. The Links are read in turn, starting after the one
// that delivered last, so a busy Link cannot starve the others.
//
// With an empty frames slice Wait consumes nothing: it returns (0, i, nil)
// as soon as Link i holds a frame (or one the kernel is still copying), so
// that the caller can read every Link itself, in the order it chooses.
//
// The spin phase uses the SpinTime of the first Link. A timeout of 0
// makes Wait a single check; a negative timeout waits without limit.
func (m *MultiWait) Wait(frames [][]byte, timeout time.Duration) (int, int, error) {
	for _, l := range m.links {
		l.rxMu.Lock()
	}
	defer m.unlock()
	if i := m.closed(); i >= 0 {
		return 0, i, ErrClosed
	}
	if n, i := m.try(frames); i >= 0 || timeout == 0 {
		return n, i, nil
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if spin := m.links[0].spin; spin > 0 {
		end := time.Now().Add(spin)
		if !deadline.IsZero() && deadline.Before(end) {
			end = deadline
		}
		if n, i, done, err := m.spinUntil(frames, end); done {
			return n, i, err
		}
	}
	fresh := false // the last poll returned because a doorbell rang
	for {
		if i := m.closed(); i >= 0 {
			return 0, i, ErrClosed
		}
		if m.woken() {
			return 0, -1, nil
		}
		// Drain the doorbells before looking at the rings (see Link.Wait).
		busy := false
		for _, l := range m.links {
			if l.fdD >= 0 {
				l.drain(l.fdD)
			}
		}
		if n, i := m.try(frames); i >= 0 {
			return n, i, nil
		}
		for _, l := range m.links {
			busy = busy || l.rx.busy()
		}
		if fresh || busy {
			if n, i, done, err := m.spinUntil(frames, time.Now().Add(doorbellGrace)); done {
				return n, i, err
			}
		}
		wait := DefaultMaxSleep
		if !deadline.IsZero() {
			rem := time.Until(deadline)
			if rem <= 0 {
				return 0, -1, nil
			}
			if rem < wait {
				wait = rem
			}
		}
		m.ts = unix.NsecToTimespec(int64(wait))
		for k := range m.pfds {
			m.pfds[k].Revents = 0
		}
		_, err := unix.Ppoll(m.pfds, &m.ts, nil)
		if err != nil && err != unix.EINTR {
			return 0, -1, &OpError{Op: "poll", Interface: m.links[0].name, Err: err}
		}
		fresh = false
		woke := false
		for k := range m.pfds {
			ev := m.pfds[k].Revents
			if ev == 0 {
				continue
			}
			l := m.links[m.owner[k]]
			switch m.kind[k] {
			case pfdEvent:
				if ev&unix.POLLIN != 0 {
					l.drain(l.efd)
					woke = true
				}
			default:
				if ev&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
					l.clearSocketError(int(m.pfds[k].Fd))
				}
				if m.kind[k] == pfdDoorbell && ev&unix.POLLIN != 0 {
					fresh = true
				}
			}
		}
		if woke {
			if i := m.closed(); i >= 0 {
				return 0, i, ErrClosed
			}
			if m.woken() {
				if n, i := m.try(frames); i >= 0 {
					return n, i, nil
				}
				return 0, -1, nil
			}
		}
	}
}

func (m *MultiWait) unlock() {
	for _, l := range m.links {
		l.rxMu.Unlock()
	}
}

// closed returns the index of a closed Link, or -1.
func (m *MultiWait) closed() int {
	for i, l := range m.links {
		if l.closed.Load() {
			return i
		}
	}
	return -1
}

// woken consumes the Wake requests of every Link and reports whether there
// was one.
func (m *MultiWait) woken() bool {
	w := false
	for _, l := range m.links {
		if l.wake.Swap(false) {
			l.drain(l.efd)
			w = true
		}
	}
	return w
}

// try looks at every ring once, in turn: with frames it reads the first
// ring that has some and returns their number and the Link's index; with
// no frames it returns the index of the first ring that holds a frame. It
// returns i = -1 if every ring is empty.
func (m *MultiWait) try(frames [][]byte) (int, int) {
	n := len(m.links)
	for k := 0; k < n; k++ {
		i := m.next + k
		if i >= n {
			i -= n
		}
		l := m.links[i]
		if len(frames) == 0 {
			if l.rx.ready() {
				m.next = i + 1
				if m.next == n {
					m.next = 0
				}
				return 0, i
			}
			continue
		}
		if got := l.recvLocked(frames); got > 0 {
			m.next = i + 1
			if m.next == n {
				m.next = 0
			}
			return got, i
		}
	}
	return 0, -1
}

// spinUntil polls the rings until end; done reports that Wait must return
// (n, i, err).
func (m *MultiWait) spinUntil(frames [][]byte, end time.Time) (n, i int, done bool, err error) {
	for k := 0; ; k++ {
		if n, i := m.try(frames); i >= 0 {
			return n, i, true, nil
		}
		if i := m.closed(); i >= 0 {
			return 0, i, true, ErrClosed
		}
		if m.woken() {
			return 0, -1, true, nil
		}
		if k&15 == 15 && !time.Now().Before(end) {
			return 0, -1, false, nil
		}
	}
}

// Running reports whether the Link's interface is up and has a carrier
// (IFF_UP and IFF_RUNNING), as the kernel says now: one ioctl(2) on the
// Link's socket, so the answer is about the interface of that name in the
// Link's network namespace. It returns false on a closed Link or if the
// interface no longer exists under its name. Safe from any goroutine.
func (l *Link) Running() bool {
	l.fdMu.RLock()
	defer l.fdMu.RUnlock()
	if l.closed.Load() || l.fdR < 0 {
		return false
	}
	ifr, err := unix.NewIfreq(l.name)
	if err != nil {
		return false
	}
	if err := unix.IoctlIfreq(l.fdR, unix.SIOCGIFFLAGS, ifr); err != nil {
		return false
	}
	f := ifr.Uint16()
	return f&unix.IFF_UP != 0 && f&unix.IFF_RUNNING != 0
}
