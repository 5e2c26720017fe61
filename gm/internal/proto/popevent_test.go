package proto

// PopEvent copies the oldest queued event into dst and removes it; it
// reports false if there is none. It is TakeEvent for tests that keep an
// event past the next call; the port itself uses TakeEvent, which copies
// nothing.
func (e *Engine) PopEvent(dst *Event) bool {
	ev := e.TakeEvent()
	if ev == nil {
		return false
	}
	dst.Type, dst.Priority, dst.Size, dst.Tag = ev.Type, ev.Priority, ev.Size, ev.Tag
	dst.SenderPort, dst.SenderNode, dst.Length, dst.Buffer = ev.SenderPort, ev.SenderNode, ev.Length, ev.Buffer
	dst.FastLen = ev.FastLen
	if ev.FastLen > 0 {
		copy(dst.Fast[:ev.FastLen], ev.Fast[:ev.FastLen])
	}
	return true
}
