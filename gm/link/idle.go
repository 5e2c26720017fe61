package link

// Idler is an Endpoint that can tell, with a few loads and without its
// receive lock, that Recv would find no frame now: a polling reader asks
// it before Recv, so that an empty poll costs almost nothing.
//
// RecvIdle belongs to the receive side: the caller must own it as Recv's
// caller does, and more strictly, since RecvIdle takes no lock: no Recv,
// Wait or Close of the endpoint may run at the same time (the port calls it
// with its mutex held, and Recv, Wait and Close only ever with that mutex
// held or handed over to a sleeper it waits for). True means that a Recv
// now would return 0 and has nothing to give back to the kernel; false
// promises nothing (call Recv). A frame that arrives just after a true
// answer is found by the next call.
type Idler interface {
	RecvIdle() bool
}

var _ Idler = (*Link)(nil)
