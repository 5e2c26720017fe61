package capture

import (
	"time"

	"github.com/ethergm/ethergm/gm/link"
)

// Wrap returns ep decorated so that w records every frame it sends and
// receives, or ep itself if w is nil (capture off). The method value
// w.Wrap is what gm.Config.WrapLink takes.
//
// The decorator is a link.Endpoint with ep's capabilities (Caps): the
// owned, idle-check, slot and multi-wait paths stay, each frame recorded
// on the way. Recording copies the frame into the Writer's buffer under
// its mutex, on the goroutine that sends or receives it: that copy and
// lock per frame are what capture costs (frames built in transmit slots
// included). A frame is recorded as it crosses the endpoint: a received
// frame when Recv, RecvOwned or Wait returns it, a sent one when it is
// handed to Send, SendOwned or SendBatch (if queued) or committed with
// TxCommit or TxCommitNext. With a cluster key (link.Config.Auth) those
// are the frames the link seals and has opened: the trailer is not
// recorded (a capture of the interface itself, with dumpcap, shows it).
// Closing the decorator closes ep; the Writer is the caller's to close,
// after it.
func (w *Writer) Wrap(ep link.Endpoint) link.Endpoint {
	if w == nil {
		return ep
	}
	return &endpoint{Endpoint: ep, w: w}
}

// endpoint is the decorator of Wrap. The methods it does not define are
// ep's (Caps among them).
type endpoint struct {
	link.Endpoint
	w    *Writer
	slot []byte // the slot last lent (TxSlot, TxCommitNext); sender side
}

// Unwrap returns the wrapped endpoint.
func (e *endpoint) Unwrap() link.Endpoint { return e.Endpoint }

func (e *endpoint) received(frames [][]byte) {
	for _, f := range frames {
		e.w.Tap(f, false)
	}
}

func (e *endpoint) Recv(frames [][]byte) int {
	n := e.Endpoint.Recv(frames)
	e.received(frames[:n])
	return n
}

func (e *endpoint) RecvOwned(frames [][]byte) int {
	n := e.Endpoint.RecvOwned(frames)
	e.received(frames[:n])
	return n
}

func (e *endpoint) Wait(frames [][]byte, timeout time.Duration) (int, error) {
	n, err := e.Endpoint.Wait(frames, timeout)
	e.received(frames[:n])
	return n, err
}

func (e *endpoint) Send(frame []byte) error {
	err := e.Endpoint.Send(frame)
	if err == nil {
		e.w.Tap(frame, true)
	}
	return err
}

func (e *endpoint) SendOwned(frame []byte) error {
	err := e.Endpoint.SendOwned(frame)
	if err == nil {
		e.w.Tap(frame, true)
	}
	return err
}

func (e *endpoint) SendBatch(frames [][]byte) (int, error) {
	n, err := e.Endpoint.SendBatch(frames)
	for _, f := range frames[:n] {
		e.w.Tap(f, true)
	}
	return n, err
}

func (e *endpoint) TxSlot() []byte {
	e.slot = e.Endpoint.TxSlot()
	return e.slot
}

// committing records the frame of n bytes about to be committed from the
// slot last lent, before the link may seal it in place.
func (e *endpoint) committing(n int) {
	if n > 0 && n <= len(e.slot) {
		e.w.Tap(e.slot[:n], true)
	}
	e.slot = nil
}

func (e *endpoint) TxCommit(n int) error {
	e.committing(n)
	return e.Endpoint.TxCommit(n)
}

func (e *endpoint) TxCommitNext(n int) ([]byte, error) {
	e.committing(n)
	s, err := e.Endpoint.TxCommitNext(n)
	e.slot = s
	return s, err
}
