package proto

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"time"

	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// Time is a monotonic instant: the time elapsed since an arbitrary origin
// chosen by the caller (the gm package uses the port's open time).
type Time = time.Duration

// Status is a GM send completion status (the values of gm_status_t).
type Status uint32

// The completion statuses the engine produces.
const (
	StatusSuccess             Status = 0
	StatusSendTimedOut        Status = 15
	StatusSendRejected        Status = 16
	StatusTargetPortClosed    Status = 17
	StatusTargetNodeUnreached Status = 18
	StatusSendDropped         Status = 19
)

// Event types the engine queues (the values of enum gm_recv_event_type).
const (
	EventRecv             = 11
	EventHighRecv         = 12
	EventPeerRecv         = 13
	EventHighPeerRecv     = 14
	EventFastRecv         = 15
	EventFastHighRecv     = 16
	EventFastPeerRecv     = 17
	EventFastHighPeerRecv = 18
	EventSentTokens       = 29
)

// MaxFastRecvBytes is GM_MAX_FAST_RECV_BYTES: messages up to this length
// produce FAST receive events whose data is held in the event itself
// (copied once, from the frame; see TakeEvent).
const MaxFastRecvBytes = 128

// Errors returned by the engine's API.
var (
	ErrNoSendToken  = errors.New("gm: no free send token: all send tokens are in use until their callbacks run in Unknown")
	ErrLength       = errors.New("gm: message length exceeds the maximum length of its size class (or the buffer)")
	ErrSize         = errors.New("gm: size class out of range 3..31")
	ErrPriority     = errors.New("gm: priority out of range 0..1")
	ErrPort         = errors.New("gm: port id out of range 0..15")
	ErrNode         = errors.New("gm: unknown target node id")
	ErrTooManyNodes = errors.New("gm: node id too large")
)

// Out is where the engine sends frames. Frames passed to Send and SendBatch
// are only valid during the call.
//
// Out, SlotOut and SlotNexter are the engine's sans-I/O view of the send
// side of the link contract (gm/link's Endpoint, which this package does
// not import): each method is the Endpoint method of the same name, and
// the port's rail set (gm/internal/rail.Set) implements all three over its
// links, with Send as the links' SendOwned. They are the only other
// statement of that contract.
type Out interface {
	Send(frame []byte) error
	SendBatch(frames [][]byte) (int, error)
}

// SlotOut is an Out that also lends transmit-ring slots (link.CapSlots):
// the engine then builds the frames of a batch directly in the slots (no
// copy), commits each and starts the batch with one Flush, if its frames
// are at least Config.ZeroCopyMin bytes (the link says from which size
// that pays). A lone frame still goes out with Send. TxSlot returns nil
// when no slot is free.
type SlotOut interface {
	Out
	TxSlot() []byte
	TxCommit(n int) error
	Flush() error
}

// SlotNexter is a SlotOut that can also commit a slot and lend the next
// one in a single call (the rail set can, with one lock round trip of a
// link.Link instead of two): the engine then fills a batch of
// slots with one such call per frame. The slot it returns (nil if none
// is free) is used only before any other call of the SlotOut.
type SlotNexter interface {
	TxCommitNext(n int) ([]byte, error)
}

// Defaults of the Config fields whose zero value means "default". The gm
// package's defaults of the same settings are these.
const (
	DefaultWindow          = 512
	DefaultProgressTimeout = 60 * time.Second
	DefaultLivenessTimeout = 30 * time.Second
	DefaultMinRTO          = 2 * time.Millisecond
	DefaultMaxRTO          = 500 * time.Millisecond
	DefaultInitialRTO      = 20 * time.Millisecond
	DefaultAckDelay        = 200 * time.Microsecond
	DefaultSampleGap       = time.Millisecond
	DefaultAckEvery        = 64
	DefaultMaxAckDelay     = 10 * time.Millisecond
	// DefaultSegLen is the segment length of a 1500-byte MTU.
	DefaultSegLen = 1500 - wire.HeaderLen
)

// MaxWindow is the largest Config.Window: the frames in flight per stream
// that the sender's and receiver's bitmaps track.
const MaxWindow = maxWindow

// Config parameterises an Engine. Zero durations take the defaults given.
type Config struct {
	NodeID    uint32  // this node's id (nonzero)
	Port      uint8   // this port's id
	MAC       [6]byte // this port's source MAC
	EtherType uint16  // 0 = wire.EtherType
	SegLen    int     // payload bytes per data frame (link MTU - wire.HeaderLen)

	SendTokens, RecvTokens int // 0 = GM defaults (61, 253)
	Window                 int // max frames in flight per stream, 1..MaxWindow; 0 = DefaultWindow

	// RecvWindow is what this port advertises in its OPEN_ACKs: the most
	// frames in flight per stream its receive ring takes (1..MaxWindow),
	// or 0 if it knows no bound. A sender keeps at most the minimum of
	// its Window and the receiver's advertisement in flight; when the
	// receiver advertises 0 (an older peer, or no known bound), it
	// assumes the receiver takes what it takes itself: RecvWindow, if
	// not 0 (see docs/PROTOCOL.md, section 7.9).
	RecvWindow int

	ProgressTimeout time.Duration // no buffer for this long -> GM_SEND_TIMED_OUT; default DefaultProgressTimeout
	LivenessTimeout time.Duration // no answer for this long -> NODE_UNREACHABLE; default DefaultLivenessTimeout
	MinRTO          time.Duration // default DefaultMinRTO
	MaxRTO          time.Duration // default DefaultMaxRTO
	InitialRTO      time.Duration // default DefaultInitialRTO
	AckDelay        time.Duration // default DefaultAckDelay
	AckEvery        int           // frames; default DefaultAckEvery

	// MaxAckDelay is how late the peer's acknowledgements may be beyond
	// the round trip: its AckDelay, and the time until its process next
	// polls the link (its progress goroutine runs every millisecond, later
	// on a loaded machine), or until it gets a CPU at all. The
	// retransmission timeout is SRTT + 4 RTTVAR + MaxAckDelay, so that a
	// busy receiver does not cause resends. Default 10 ms.
	MaxAckDelay time.Duration

	// ZeroCopyMin is the smallest full data frame (header included, in
	// bytes) for which the engine builds frames in place in the ring slots
	// of a SlotOut; smaller ones are built in a buffer and copied by
	// SendBatch. 0 means never (the gm package sets it from the link's
	// link.Geometry).
	ZeroCopyMin int

	// Resolve maps a node id to the MAC its frames go to. It is called
	// when a peer is first used and after InvalidatePeers.
	Resolve func(node uint32) ([6]byte, bool)
	// Sources fills dst with the MACs frames from node may come from (its
	// MACs in the node map, one per rail) and returns how many it filled:
	// a frame that claims node as its source but comes from another MAC
	// is dropped (Misaddressed). It is called when a frame of the peer is
	// first seen and after InvalidatePeers. Nil means any MAC.
	Sources func(node uint32, dst *[MaxSources][6]byte) int
	// AnswerClosed reports whether this port answers, with NackPortClosed,
	// data frames addressed to local port p (p is not open on this host and
	// this port is the host's designated responder). Nil means never.
	AnswerClosed func(p uint8) bool

	// NoCongestionControl turns the congestion window off (cc.go): every
	// stream keeps its whole window in flight, as before congestion
	// control existed. For comparisons; false in normal use.
	NoCongestionControl bool

	// Clock, if not nil, is the precise clock, and the times passed to
	// the engine's calls may lag it (a coarse clock that a caller reads
	// once per batch of calls): the engine then reads Clock only for the
	// two ends of a round-trip sample, and times at most one send per
	// stream per SampleGap. The timers run late by the lag, never early
	// (retransmission deadlines armed from a lagging time would be early
	// by the lag: MaxAckDelay, far above the lag of a caller that reads
	// the clock at least once per progress tick or per few messages,
	// covers it). Nil: every time passed is precise.
	Clock func() Time
	// SampleGap is the least time between the starts of two round-trip
	// samples of a stream when Clock is set; default DefaultSampleGap.
	SampleGap time.Duration
}

// Event is one entry of the port's event queue.
type Event struct {
	Type       uint8
	Priority   uint8
	Size       uint8
	Tag        uint8
	SenderPort uint8
	SenderNode uint32
	Length     uint32
	Buffer     []byte // the provided buffer, as provided
	FastLen    int    // bytes of Fast in use (FAST events)
	Fast       [MaxFastRecvBytes]byte

	ackRS *rxStream // the stream whose requested ack waits for this event to be taken (onSeq)
	dgram bool      // a datagram's (datagram.go)
}

// Stats counts protocol activity (for tests, benchmarks and diagnostics).
type Stats struct {
	DataSent, DataRetransmitted, AcksSent, NacksSent               uint64
	DataReceived, Duplicates, OutOfWindow, Delivered               uint64
	NacksReceived, AcksReceived, Timeouts, StaleDropped, Malformed uint64
	PartialBatches                                                 uint64

	// The session handshake: OPENs sent (first and repeated), OPENs
	// received (from a resolvable peer), OPEN_ACKs sent, and sessions
	// started at the receiver (the first frame of a confirmed session).
	OpensSent, OpensReceived, OpenAcksSent, SessionsStarted uint64

	// NACKs by reason (wire.NackReason), sent and received; they add up
	// to NacksSent and NacksReceived (a reason outside these four counts
	// only there).
	NacksSentNoBuffer, NacksSentRejected, NacksSentPortClosed, NacksSentStaleSession                 uint64
	NacksReceivedNoBuffer, NacksReceivedRejected, NacksReceivedPortClosed, NacksReceivedStaleSession uint64

	// Frames Input dropped without another counter: Misaddressed ones
	// (another target node or port, a source port of 16 or more, a source
	// node that is 0 or not in the node map: nothing is allocated for
	// it; a source MAC that is not one of the source node's in the map) and Ignored ones (a type this port does not take, such as
	// mapper frames, or an ACK, NACK or OPEN_ACK of no current session).
	Misaddressed, Ignored uint64

	// PeerResets counts peers whose state ResetPeer discarded (a node
	// map change of their identity, or of this port's).
	PeerResets uint64

	// Retransmissions by cause: frames selective acks (or a timeout's
	// probe) showed lost, frames a retransmission timeout resent, and
	// frames the receiver asked for again (an ACK with FlagRetransmit).
	// With the frames resent because a batch was only partly sent, they
	// add up to DataRetransmitted.
	RetransmitsLoss, RetransmitsTimeout, RetransmitsGoBack uint64
	// Congestion windows shrunk on loss and on delay (cc.go), and frames
	// lost that did not shrink the window (isolated, random losses).
	WindowCutsLoss, WindowCutsDelay, LossesRandom uint64

	// Datagrams (datagram.go): sent, delivered (also counted in
	// Delivered), dropped for want of a buffer of their size and
	// priority, and dropped as replays (a counter already accepted from
	// the source, or older than the window).
	DatagramsSent, DatagramsReceived, DatagramsNoBuffer, DatagramsReplayed uint64
}

const (
	maxWindow = 1024
	bitWords  = maxWindow / 64
	maxNodes  = 1 << 20
	qCap      = 128 // per-stream message queue capacity (see MaxSendTokens)
	batchMax  = 64
	noSlot    = -1
)

type bitmap [bitWords]uint64

func (b *bitmap) get(s uint32) bool { i := s & (maxWindow - 1); return b[i>>6]&(1<<(i&63)) != 0 }
func (b *bitmap) set(s uint32)      { i := s & (maxWindow - 1); b[i>>6] |= 1 << (i & 63) }
func (b *bitmap) clr(s uint32)      { i := s & (maxWindow - 1); b[i>>6] &^= 1 << (i & 63) }
func (b *bitmap) reset()            { *b = bitmap{} }

// diff returns a-b in sequence space.
func diff(a, b uint32) int32 { return int32(a - b) }

type recKind uint8

const (
	recMsg recKind = iota
	recMarker
	recPut // a PUT transfer (rdma.go)
	recGet // a GET request; completes when its data arrived (rdma.go)
	recGot // a GOT reply to a peer's GET; no send token (rdma.go)
)

type sendRec struct {
	msg      []byte
	length   uint32
	size     uint8
	kind     recKind
	firstSeq uint32
	nseg     uint32
	status   Status
	cb, ctx  any
	next     int32  // free list / completion list link
	raddr    uint64 // PUT, GET, GOT: the frames' remote address (rdma.go)
	xlen     uint32 // GET: the length to read, the frame's msglen (rdma.go)
}

type txStream struct {
	peer *peer
	port uint8
	pri  uint8

	session    uint32
	isn        uint32 // the session's first sequence number (chosen by the receiver)
	opening    bool   // session is proposed (OPEN) and not yet answered (OPEN_ACK)
	window     int32  // frames in flight at most: Window, or less if the receiver's OPEN_ACK says so
	openSent   bool   // the OPEN went out; rtoAt is when it is repeated
	prevSess   uint32 // opening: the session left, whose delivered prefix the OPEN_ACK reports
	failSt     Status // the error that last disabled the stream in this session (0 if none)
	finalAck   bool   // the receiver closed and told its final ack of this session: it delivered nothing unacknowledged
	nextSeq    uint32 // first seq not yet assigned to a message
	una        uint32 // oldest unacknowledged seq
	nxt        uint32 // next never-sent (or rewound) seq
	hiSent     uint32 // one past the highest seq sent in this session
	rtxNext    uint32
	rtxEnd     uint32
	rtxAll     bool              // resend every unacked frame in the range (timeout), not only lost ones
	rtxCause   uint8             // why the frames in the range are resent (causeLoss, ...)
	rtoProbe   bool              // a retransmission timeout resent rtoSeq alone (see onAck)
	rtoSeq     uint32            // the newest unacknowledged frame when the timeout expired
	txCount    uint32            // transmissions so far
	txIdx      [maxWindow]uint32 // transmission index of each frame in flight
	lostBefore uint32            // frames transmitted before this index and unacked are lost
	sacked     bitmap

	q         [qCap]int32
	qHead     int
	qLen      int
	qAssigned int // messages from the head that have sequence numbers
	cursor    int // queue offset cache for locate

	disabled bool
	probing  bool
	active   bool

	srtt, rttvar, rto time.Duration
	minRTT, lastRTT   time.Duration // the smallest round trip of the last minRTTWindow (cc.go), the last one
	minAt             Time          // when minRTT was taken
	rttSeq            uint32
	rttTime           Time
	rttValid          bool
	rtoAt             Time
	lastHeard         Time
	lastAdvance       Time // when una last moved (or the stream became busy)
	backoff           time.Duration
	backoffUntil      Time
	noBufSince        Time   // when the refused message became the oldest unacknowledged one
	noBuf             bool   // the receiver refused the message at noBufSeq (NackNoBuffer)
	noBufSeq          uint32 // first sequence number of the refused message
	fastHold          Time

	// The stream's last frame of a one-frame message up to its payload,
	// and what it was built for (see addOne).
	tmpl    [wire.EthHeaderLen + wire.HeaderLen]byte
	tmplFor frameKey
}

// frameKey is what a stream's frames depend on besides the stream itself:
// the destination MAC, this node's id and the session.
type frameKey struct {
	dst     [6]byte
	node    uint32
	session uint32
	ok      bool
}

type rxStream struct {
	peer *peer
	port uint8
	pri  uint8

	valid   bool
	session uint32
	isn     uint32 // the session's first sequence number
	retired [4]retiredSession
	retN    int
	rcvNxt  uint32

	// The session handshake: the session an OPEN proposed (0 if none) and
	// the first sequence number this receiver chose for it. Only a frame
	// of that session at exactly that sequence number starts it.
	pendSess uint32
	pendSeq  uint32
	// Sessions proposed here and superseded by a later OPEN before their
	// first frame arrived, with the first sequence number this receiver
	// gave each: nothing of them was delivered, which an OPEN leaving one
	// is told (onOpen), so a stranger's OPEN that displaces a pending
	// session makes no send fail.
	superseded [4]retiredSession
	supN       int
	ooo        bitmap
	oooHi      uint32 // one past the highest out-of-order seq received (when oooAny)
	oooAny     bool

	msgs     [rxMsgs]rxMsg // messages being reassembled, in sequence order
	mHead    int
	mLen     int
	segLen   uint32 // the sender's segment length, learned from full frames
	dropped  bool   // frames after the current message were dropped
	ackState uint8
	unacked  int
	ackDue   Time
	inAck    bool

	lastNackSeq    uint32 // the refused message of the last nack sent on the stream
	lastNackReason wire.NackReason
	staleNackAt    Time // when a frame of a retired session was last answered
}

// staleNackGap is the least time between two NackStaleSession answers to
// frames of retired sessions on one stream.
const staleNackGap = time.Millisecond

// rxMsgs is how many messages of one stream can be reassembled at once.
const rxMsgs = 64

// retiredSession is a session a receive stream has left, and its rcvNxt
// then: every message before next was delivered, none after it ever will
// be.
type retiredSession struct {
	sess, next uint32
}

type rxMsg struct {
	slot    int
	start   uint32
	nseg    uint32
	segLen  uint32
	msgLen  uint32
	size    uint8
	fastLen int
	fast    [MaxFastRecvBytes]byte
	kind    wire.Type // 0 for a message; PUT, GET or GOT (slot indexes rdma.rx)
}

const (
	ackNone uint8 = iota
	ackDelayed
	ackNow
)

// MaxSources is the most MACs a peer's frames may come from (see
// Config.Sources).
const MaxSources = 16

type peer struct {
	node  uint32
	mac   [6]byte
	macOK bool
	srcOK bool // src[:nsrc] are the MACs the peer's frames may come from
	nsrc  int
	cc    congestion // the host's congestion window (cc.go)
	src   [MaxSources][6]byte
	tx    [wire.NumPorts][numStreams]*txStream // [port][pri], and [port][replyPri] (reply.go)
	rx    [wire.NumPorts][numStreams]*rxStream
}

// Engine is one port's protocol state. It is not safe for concurrent use.
type Engine struct {
	cfg   Config
	out   Out
	pools *token.Pools

	sendTokens token.Counter
	recs       []sendRec
	recFree    int32
	compHead   int32
	compTail   int32
	compN      int

	peers   []*peer
	active  []*txStream
	ackList []*rxStream
	events  []Event
	evHead  int
	evLen   int
	taken   *Event // the event TakeEvent returned last (its slot is not reused before the next)
	// rxFast is the payload of the FAST message rxFastMsg while the
	// Input call that placed it runs (a view of the frame): deliver
	// copies it straight into the event.
	rxFast    []byte
	rxFastMsg *rxMsg
	sentQd    bool
	inInput   bool // Input runs: completions queue their SENT_TOKENS event when it ends
	sentLate  bool // a completion during Input waits for its SENT_TOKENS event
	deadline  Time

	slots       SlotOut    // out, if it lends ring slots
	slotsNext   SlotNexter // slots, if it commits and lends in one call
	nextSlot    []byte     // the slot the last TxCommitNext lent (see commit)
	queued      int        // frames committed to ring slots and not yet kicked
	txBufs      [][]byte
	txFrames    [][]byte
	txSeq       []uint32
	txNew       []bool
	ctrlBuf     []byte
	sackScratch [maxWindow / 8]byte
	hdr         wire.HeaderFields
	stats       Stats
	txBlock     bool

	rnd [4]byte // crypto/rand scratch

	tr      [traceLen]traceEntry
	trN     int
	lastNow Time // the time of the last Input (for traces)

	rdma  *rdmaState // puts and gets (rdma.go); nil until first used
	dgram *dgState   // datagrams (datagram.go); nil until first used
}

// New returns an engine for cfg that sends through out.
func New(cfg Config, out Out) *Engine {
	if cfg.EtherType == 0 {
		cfg.EtherType = wire.EtherType
	}
	if cfg.SendTokens <= 0 {
		cfg.SendTokens = token.DefaultSendTokens
	}
	if cfg.RecvTokens <= 0 {
		cfg.RecvTokens = token.DefaultReceiveTokens
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	cfg.Window = min(cfg.Window, maxWindow)
	cfg.RecvWindow = min(max(cfg.RecvWindow, 0), maxWindow)
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ProgressTimeout, DefaultProgressTimeout)
	def(&cfg.LivenessTimeout, DefaultLivenessTimeout)
	def(&cfg.MinRTO, DefaultMinRTO)
	def(&cfg.MaxRTO, DefaultMaxRTO)
	def(&cfg.InitialRTO, DefaultInitialRTO)
	def(&cfg.AckDelay, DefaultAckDelay)
	def(&cfg.SampleGap, DefaultSampleGap)
	def(&cfg.MaxAckDelay, DefaultMaxAckDelay)
	if cfg.AckEvery <= 0 {
		cfg.AckEvery = DefaultAckEvery
	}
	if cfg.SegLen <= 0 {
		cfg.SegLen = DefaultSegLen
	}
	e := &Engine{
		cfg:        cfg,
		out:        out,
		pools:      token.NewPools(cfg.RecvTokens),
		sendTokens: token.NewCounter(cfg.SendTokens),
		recs:       make([]sendRec, cfg.SendTokens),
		compHead:   -1,
		compTail:   -1,
		events:     make([]Event, cfg.RecvTokens+cfg.SendTokens+8),
		active:     make([]*txStream, 0, 64),
		ackList:    make([]*rxStream, 0, 64),
		txBufs:     make([][]byte, batchMax),
		txFrames:   make([][]byte, 0, batchMax),
		txSeq:      make([]uint32, 0, batchMax),
		txNew:      make([]bool, 0, batchMax),
		ctrlBuf:    make([]byte, 0, wire.EthHeaderLen+wire.HeaderLen+maxWindow/8+64),
	}
	if cfg.ZeroCopyMin > 0 && wire.EthHeaderLen+wire.HeaderLen+cfg.SegLen >= cfg.ZeroCopyMin {
		e.slots, _ = out.(SlotOut)
		e.slotsNext, _ = out.(SlotNexter)
	}
	for i := range e.recs {
		e.recs[i].next = int32(i + 1)
	}
	e.recs[len(e.recs)-1].next = -1
	for i := range e.txBufs {
		e.txBufs[i] = make([]byte, 0, wire.EthHeaderLen+wire.HeaderLen+cfg.SegLen)
	}
	return e
}

// Config returns the engine's configuration with defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats { return e.stats }

// Pools returns the provided-buffer pools (for counts and masks).
func (e *Engine) Pools() *token.Pools { return e.pools }

// SendTokens returns the send-token counter.
func (e *Engine) SendTokens() *token.Counter { return &e.sendTokens }

// NextDeadline returns the earliest time at which Tick has work to do, or 0
// if there is none.
func (e *Engine) NextDeadline() Time { return e.deadline }

// Busy reports whether the engine has protocol work outstanding (unacked
// frames, pending acks or transmissions).
func (e *Engine) Busy() bool { return len(e.active) > 0 || len(e.ackList) > 0 || e.txBlock }

// SetNodeID changes this port's node id (after a node map change).
func (e *Engine) SetNodeID(id uint32) { e.cfg.NodeID = id }

// InvalidatePeers forgets every cached node-to-MAC resolution (call it after
// the node map changed).
func (e *Engine) InvalidatePeers() {
	for _, p := range e.peers {
		if p != nil {
			p.macOK, p.srcOK = false, false
		}
	}
}

// known reports whether a frame from node may create state: a peer that
// exists already, or a node id that the node map resolves (every node
// without a Resolve function). A forger claiming ever new node ids then
// allocates nothing.
func (e *Engine) known(node uint32) bool {
	if node == 0 || node >= maxNodes {
		return false
	}
	if int(node) < len(e.peers) && e.peers[node] != nil {
		return true
	}
	if e.cfg.Resolve == nil {
		return true
	}
	_, ok := e.cfg.Resolve(node)
	return ok
}

func (e *Engine) peer(node uint32) *peer {
	if node == 0 || node >= maxNodes {
		return nil
	}
	if int(node) >= len(e.peers) {
		n := len(e.peers) * 2
		if n <= int(node) {
			n = int(node) + 16
		}
		n = min(n, maxNodes) // the table never holds more than every node id
		np := make([]*peer, n)
		copy(np, e.peers)
		e.peers = np
	}
	p := e.peers[node]
	if p == nil {
		p = &peer{node: node}
		e.ccInit(p)
		e.peers[node] = p
	}
	return p
}

// fromPeer reports whether a frame from MAC src may come from peer p.
func (e *Engine) fromPeer(p *peer, src [6]byte) bool {
	if e.cfg.Sources == nil {
		return true
	}
	if !p.srcOK {
		p.nsrc = min(max(e.cfg.Sources(p.node, &p.src), 0), MaxSources)
		p.srcOK = true
	}
	for i := 0; i < p.nsrc; i++ {
		if p.src[i] == src {
			return true
		}
	}
	return false
}

func (e *Engine) resolve(p *peer) bool {
	if p.macOK {
		return true
	}
	if e.cfg.Resolve == nil {
		return false
	}
	p.mac, p.macOK = e.cfg.Resolve(p.node)
	return p.macOK
}

func (e *Engine) tx(p *peer, port, pri uint8) *txStream {
	s := p.tx[port][pri]
	if s == nil {
		s = &txStream{peer: p, port: port, pri: pri, rto: e.cfg.InitialRTO, window: int32(e.cfg.Window)}
		e.open(0, s)
		p.tx[port][pri] = s
	}
	return s
}

func (e *Engine) rx(p *peer, port, pri uint8) *rxStream {
	s := p.rx[port][pri]
	if s == nil {
		s = &rxStream{peer: p, port: port, pri: pri}
		p.rx[port][pri] = s
	}
	return s
}

// random32 returns a nonzero number from crypto/rand: sessions and initial
// sequence numbers must be unpredictable to a host that does not see the
// frames (a forger that could guess them could inject frames or displace a
// session).
func (e *Engine) random32() uint32 {
	for {
		_, _ = crand.Read(e.rnd[:])
		if v := binary.BigEndian.Uint32(e.rnd[:]); v != 0 {
			return v
		}
	}
}

// open starts the session handshake on s: a fresh random session is
// proposed to the receiver with an OPEN (sent by pump when s has something
// to send, repeated by Tick until answered), naming the session s leaves.
// Nothing is sent in the new session until the receiver's OPEN_ACK gives
// its first sequence number and how much of the previous session it
// delivered; until then the queued messages keep the previous session's
// numbers, so that the answer can complete the messages the receiver has
// (see onOpenAck). If s is already opening, the new proposal replaces the
// unanswered one and still names the last session that carried data.
func (e *Engine) open(now Time, s *txStream) {
	if !s.opening {
		s.prevSess = s.session // 0 for a new stream
		s.opening = true
	}
	old := s.session
	for s.session == old || s.session == s.prevSess {
		s.session = e.random32()
	}
	e.trace(now, trSession, s.peer.node, s.port, s.pri, s.isn, s.session, old, s.prevSess, 0, 0)
	s.openSent = false
	s.nxt = s.una
	s.rtxNext, s.rtxEnd, s.rtxAll, s.rtoProbe = s.una, s.una, false, false
	s.probing, s.noBuf, s.backoffUntil, s.backoff = false, false, 0, 0
	s.rttValid = false
}

// established starts the session s proposed, whose receiver answered with
// the session's first sequence number isn: every queued message is
// numbered anew from isn, and the session's first frame goes alone until it
// is acknowledged.
func (e *Engine) established(now Time, s *txStream, isn uint32) {
	s.opening, s.openSent, s.prevSess = false, false, 0
	s.failSt, s.finalAck = 0, false
	s.isn = isn
	s.nextSeq, s.una, s.nxt, s.hiSent, s.rtxNext, s.rtxEnd = isn, isn, isn, isn, isn, isn
	s.sacked.reset()
	s.qAssigned = 0
	s.cursor = 0
	s.rtoProbe, s.rtxAll = false, false
	s.probing, s.noBuf, s.backoffUntil = true, false, 0
	s.rttValid = false
	s.backoff = 0
	s.lastAdvance = now
}

func (e *Engine) activate(s *txStream) {
	if !s.active {
		s.active = true
		e.active = append(e.active, s)
	}
}

// ---- send side API ----

func (e *Engine) allocRec() int32 {
	i := e.recFree
	if i < 0 {
		return -1
	}
	e.recFree = e.recs[i].next
	e.recs[i].next = -1
	return i
}

// checkSend checks the arguments of a message or datagram send that do not
// depend on the engine's state.
func checkSend(msg []byte, size uint8, length int, pri, port uint8) error {
	if size < token.MinMessageSize || size > token.MaxSize {
		return ErrSize
	}
	if pri >= token.NumPriorities {
		return ErrPriority
	}
	if port >= wire.NumPorts {
		return ErrPort
	}
	if length < 0 || length > token.MaxLengthForSize(size) || length > len(msg) {
		return ErrLength
	}
	return nil
}

// Send queues a message (gm_send_with_callback). cb and ctx come back from
// PopCompletion. It fails without side effects on misuse or when no send
// token is free.
func (e *Engine) Send(now Time, msg []byte, size uint8, length int, pri uint8, node uint32, port uint8, cb, ctx any) error {
	if err := checkSend(msg, size, length, pri, port); err != nil {
		return err
	}
	p := e.peer(node)
	if p == nil || !e.resolve(p) {
		return ErrNode
	}
	s := e.tx(p, port, pri)
	if s.qLen >= qCap || !e.sendTokens.TryAcquire() {
		// A full queue: only with more than MaxSendTokens tokens.
		return ErrNoSendToken
	}
	i := e.allocRec()
	r := &e.recs[i]
	nseg := uint32(1) // no division for a message of one frame
	if seg := uint32(e.cfg.SegLen); uint32(length) > seg {
		nseg = (uint32(length) + seg - 1) / seg
	}
	*r = sendRec{msg: msg, length: uint32(length), size: size, kind: recMsg, nseg: nseg, cb: cb, ctx: ctx, next: -1}
	if s.qLen == 0 {
		// The stream becomes busy: the liveness and stall timeouts run
		// from now.
		s.lastHeard, s.lastAdvance = now, now
	}
	s.q[(s.qHead+s.qLen)%qCap] = i
	s.qLen++
	e.activate(s)
	if !s.disabled {
		e.pump(now, s)
		e.setDeadline(now)
	}
	return nil
}

// Resume is gm_resume_sending: it re-enables the stream (pri, node, port)
// after an error; held messages go ahead in a new session. The marker's
// completion (StatusSuccess) is queued at once. It takes a send token.
func (e *Engine) Resume(now Time, pri uint8, node uint32, port uint8, cb, ctx any) error {
	return e.recover(now, pri, node, port, cb, ctx, false)
}

// Drop is gm_drop_sends: every send held on the stream completes with
// StatusSendDropped, then the stream is re-enabled and the marker completes
// with StatusSuccess. It takes a send token.
func (e *Engine) Drop(now Time, pri uint8, node uint32, port uint8, cb, ctx any) error {
	return e.recover(now, pri, node, port, cb, ctx, true)
}

func (e *Engine) recover(now Time, pri uint8, node uint32, port uint8, cb, ctx any, drop bool) error {
	if pri >= token.NumPriorities {
		return ErrPriority
	}
	if port >= wire.NumPorts {
		return ErrPort
	}
	p := e.peer(node)
	if p == nil {
		return ErrNode
	}
	if !e.sendTokens.TryAcquire() {
		return ErrNoSendToken
	}
	s := e.tx(p, port, pri)
	if s.disabled {
		if drop {
			for s.qLen > 0 {
				e.complete(e.popHead(s), StatusSendDropped)
			}
		}
		e.reenable(now, s)
	}
	i := e.allocRec()
	e.recs[i] = sendRec{kind: recMarker, cb: cb, ctx: ctx, next: -1}
	e.complete(i, StatusSuccess)
	e.setDeadline(now)
	return nil
}

// reenable lets a disabled stream send again, in a new session (frames
// of the old one are then stale at the receiver), and sends what it holds.
func (e *Engine) reenable(now Time, s *txStream) {
	s.disabled = false
	e.open(now, s)
	s.lastHeard, s.lastAdvance = now, now
	if s.qLen > 0 {
		e.activate(s)
		e.pump(now, s)
	}
}

func (e *Engine) popHead(s *txStream) int32 {
	i := s.q[s.qHead]
	s.qHead = (s.qHead + 1) % qCap
	s.qLen--
	if s.qAssigned > 0 {
		s.qAssigned--
	}
	if s.cursor > 0 {
		s.cursor--
	}
	return i
}

func (e *Engine) complete(i int32, st Status) {
	r := &e.recs[i]
	if r.kind >= recGet && e.rdmaComplete(i, st) {
		return // a GET waiting for its data, or an internal GOT (rdma.go)
	}
	r.status = st
	r.next = -1
	if e.compTail < 0 {
		e.compHead = i
	} else {
		e.recs[e.compTail].next = i
	}
	e.compTail = i
	e.compN++
	if e.inInput {
		e.sentLate = true // queued when Input ends, after its receive events
		return
	}
	e.queueSent()
}

// queueSent queues a SENT_TOKENS event unless one is queued.
func (e *Engine) queueSent() {
	if !e.sentQd {
		e.sentQd = true
		ev := e.pushEvent()
		*ev = Event{Type: EventSentTokens}
	}
}

// Completions returns the number of completed sends whose callbacks have
// not run yet.
func (e *Engine) Completions() int { return e.compN }

// PopCompletion removes the oldest completed send, gives its send token
// back and returns its callback, context and status.
func (e *Engine) PopCompletion() (cb, ctx any, st Status, ok bool) {
	i := e.compHead
	if i < 0 {
		return nil, nil, 0, false
	}
	r := &e.recs[i]
	e.compHead = r.next
	if e.compHead < 0 {
		e.compTail = -1
	}
	e.compN--
	cb, ctx, st = r.cb, r.ctx, r.status
	*r = sendRec{next: e.recFree}
	e.recFree = i
	e.sendTokens.Release()
	return cb, ctx, st, true
}

// ---- receive side API ----

// Provide is gm_provide_receive_buffer_with_tag.
func (e *Engine) Provide(buf []byte, size, pri, tag uint8) error {
	return e.pools.Provide(token.Buffer{Buf: buf, Size: size, Priority: pri, Tag: tag})
}

func (e *Engine) pushEvent() *Event {
	if e.evLen >= len(e.events)-1 {
		// Cannot happen: receive events are bounded by receive tokens and
		// at most one SENT_TOKENS event is queued. Grow rather than lose.
		// One slot stays free: the one TakeEvent returned last, which
		// must not be overwritten before the next TakeEvent (a grown
		// queue leaves it in the old array, where it stays valid).
		ne := make([]Event, 2*len(e.events))
		for i := 0; i < e.evLen; i++ {
			ne[i] = e.events[(e.evHead+i)%len(e.events)]
		}
		e.events, e.evHead = ne, 0
	}
	i := e.evHead + e.evLen // < 2*len(e.events); no division on the message path
	if i >= len(e.events) {
		i -= len(e.events)
	}
	ev := &e.events[i]
	e.evLen++
	return ev
}

// Pending returns the number of queued events.
func (e *Engine) Pending() int { return e.evLen }

// PeekEvent returns the oldest queued event without removing it, or nil.
func (e *Engine) PeekEvent() *Event {
	if e.evLen == 0 {
		return nil
	}
	return &e.events[e.evHead]
}

// TakeEvent removes the oldest queued event and returns it, or nil if there
// is none. The event, with its Fast bytes, stays in the engine's queue slot
// and is valid until the next TakeEvent call: that slot is not reused
// before (no copy of the event or of a FAST message is needed).
// Taking a receive event may make an ack due at once (NextDeadline then
// says so): it goes out with the next Pump or Tick, unless a send to the
// message's sender carries it first.
func (e *Engine) TakeEvent() *Event {
	if t := e.taken; t != nil {
		t.Buffer = nil // the slot no longer holds the client's buffer
		e.taken = nil
	}
	if e.evLen == 0 {
		return nil
	}
	ev := &e.events[e.evHead]
	if ev.Type == EventSentTokens {
		e.sentQd = false
	}
	if rs := ev.ackRS; rs != nil {
		ev.ackRS = nil
		if rs.ackState == ackDelayed {
			// The application has the message: unless its answer
			// carries the ack the sender asked for, it goes out with the
			// next Pump or Tick, which are due now.
			rs.ackState = ackNow
			if t := max(e.lastNow, 1); e.deadline == 0 || e.deadline > t {
				e.deadline = t
			}
		}
	}
	if e.evHead++; e.evHead == len(e.events) {
		e.evHead = 0
	}
	e.evLen--
	e.taken = ev
	return ev
}

// countNack counts a NACK of reason in the counter of its reason among
// noBuffer, rejected, portClosed and stale.
func countNack(reason wire.NackReason, noBuffer, rejected, portClosed, stale *uint64) {
	switch reason {
	case wire.NackNoBuffer:
		*noBuffer++
	case wire.NackRejected:
		*rejected++
	case wire.NackPortClosed:
		*portClosed++
	case wire.NackStaleSession:
		*stale++
	}
}
