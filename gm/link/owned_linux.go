package link

// SendOwned is link.OwnedSender's: Send without the send mutex, for a
// caller that owns the send side (no other send method and no Close may
// run concurrently; see OwnedSender).
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
