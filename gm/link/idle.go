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

// OwnedReceiver is an Endpoint whose receive side an owner (see Idler)
// can read without the endpoint's receive lock: RecvOwned is Recv for a
// caller that promises what RecvIdle's caller does (no Recv, Wait or Close
// at the same time). It saves Recv's lock round trip (two locked
// instructions) on every poll that reads frames.
type OwnedReceiver interface {
	RecvOwned(frames [][]byte) int
}

// OwnedSender is an Endpoint whose send side an owner can use without the
// endpoint's send lock: SendOwned is Send for a caller that promises that
// no other send method (Send, SendBatch, TxSlot, TxCommit, Flush) and no
// Close runs at the same time. It saves Send's lock round trip per frame.
type OwnedSender interface {
	SendOwned(frame []byte) error
}

var (
	_ Idler         = (*Link)(nil)
	_ OwnedReceiver = (*Link)(nil)
	_ OwnedSender   = (*Link)(nil)
)
