package proto

// SwapFirstEvents exchanges the two oldest queued events; it reports false
// (and does nothing) if fewer than two are queued. The gm package uses it
// to hand out a receive event ahead of a SENT_TOKENS event that the same
// frame produced (a reply carries the ack of the request): the receive is
// what a ping-pong waits for, the send tokens can come back right after.
func (e *Engine) SwapFirstEvents() bool {
	if e.evLen < 2 {
		return false
	}
	i, j := e.evHead, e.evHead+1
	if j == len(e.events) {
		j = 0
	}
	e.events[i], e.events[j] = e.events[j], e.events[i]
	return true
}
