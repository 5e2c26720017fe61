package link

import "time"

// linkCaps are the capabilities of a Link.
const linkCaps = CapOwnedReceive | CapIdle | CapOwnedSend | CapSlots | CapPortFilter | CapMultiWait

// Caps returns the capabilities of a Link: every one.
func (l *Link) Caps() Caps { return linkCaps }

// Unwrap returns nil: a Link wraps no endpoint.
func (l *Link) Unwrap() Endpoint { return nil }

// JoinWait returns a Waiter over eps, which must all be Links (nil
// otherwise): a MultiWait that reads nothing.
func (l *Link) JoinWait(eps []Endpoint) Waiter {
	links := make([]*Link, len(eps))
	for i, e := range eps {
		x, ok := e.(*Link)
		if !ok {
			return nil
		}
		links[i] = x
	}
	return linkWaiter{NewMultiWait(links...)}
}

// linkWaiter is the Waiter of Links.
type linkWaiter struct{ m *MultiWait }

func (w linkWaiter) Wait(timeout time.Duration) error {
	_, _, err := w.m.Wait(nil, timeout)
	return err
}

// SendOwned is Endpoint's: Send without the send mutex, for a caller that
// owns the send side (no other send method and no Close may run
// concurrently).
func (l *Link) SendOwned(frame []byte) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.checkSize(frame); err != nil {
		return err
	}
	return l.sendLocked(l.sealCopy(frame))
}

// sealCopy returns frame as sent: with a cluster key, a sealed copy in the
// sealing buffer (the caller's frame is left as it is); without, frame
// itself. The caller holds the send side.
func (l *Link) sealCopy(frame []byte) []byte {
	if l.auth == nil {
		return frame
	}
	n := copy(l.sealBuf, frame)
	if m := l.auth.Seal(l.sealBuf); m > 0 {
		n = m
	}
	return l.sealBuf[:n]
}
