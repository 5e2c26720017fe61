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
	if l.auth != nil {
		n := copy(l.sealBuf, frame)
		if m := l.auth.Seal(l.sealBuf); m > 0 {
			n = m
		}
		frame = l.sealBuf[:n]
	}
	return l.sendLocked(frame)
}
