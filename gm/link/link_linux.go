package link

import (
	"errors"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/ethergm/ethergm/wire"
	"github.com/ethergm/ethergm/wire/auth"
)

// Tuning constants of the Linux implementation.
const (
	// doorbellGrace is how long Wait spins on the ring after the doorbell
	// rang but the ring did not yet show the frame (the kernel delivers to
	// the ring socket first, but the order of the two sockets can change,
	// e.g. after the interface went down and up).
	doorbellGrace = 20 * time.Microsecond
	// txRetries bounds the retries of a send that failed with EAGAIN or
	// ENOBUFS, and of waits for a transmit slot.
	txRetries = 16
	// txBlockSize is the transmit ring's block size (slots never straddle
	// blocks; the block holds at least one slot).
	txBlockSize = 64 << 10
	// rxFrameHint is tpacket_req3.tp_frame_size for the receive ring. It
	// is only a consistency parameter for V3 (frames are variable-sized),
	// large enough for a 9000-byte MTU frame.
	rxFrameHint = 16 << 10
	// selfTestTimeout bounds the wait for each self-test frame. A frame
	// sent to lo normally arrives before sendto returns; on a loaded
	// machine the kernel may defer it to ksoftirqd, and a shorter bound
	// would then fall back to another mode for no reason.
	selfTestTimeout = time.Second
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Link is an EtherGM endpoint on one Ethernet interface: a receive ring
// filtered to one EtherType and a set of target ports, and a transmit path.
// See the package documentation for the concurrency contract.
type Link struct {
	name    string
	ifindex int
	loIndex int // the loopback interface of the namespace (0: none)
	// bindIndex is the interface the receiving sockets are bound to: 0
	// (every interface; the filter selects ours and lo) if there is a
	// loopback interface, else ifindex.
	bindIndex int
	// saDev and saLo address send(2)s to the interface and to lo (the
	// ring socket is bound to bindIndex, so every send names its device).
	saDev, saLo unix.RawSockaddrLinklayer
	hw          net.HardwareAddr
	mac         [6]byte
	mtu         int // the interface's
	umtu        int // what frames may use: mtu, less auth.TrailerLen with a cluster key
	cfg         Config
	auth        *auth.Authenticator // cluster key (nil: none)
	sealBuf     []byte              // Send's sealing buffer (with a cluster key); under txMu
	spin        time.Duration
	maxSleep    time.Duration // Config.MaxSleep
	mode        string

	fdR, fdD, fdT, efd int // ring socket, doorbell socket (-1 if none), TX-ring socket, eventfd
	rxMem, txMem       []byte

	rxMu sync.Mutex // held by Recv and Wait; Close takes it to wait for the reader
	rx   rxRing
	pfds [3]unix.PollFd
	npfd int
	ts   unix.Timespec
	buf  [64]byte // drain buffer for the doorbell and the eventfd

	txMu sync.Mutex // held by the send methods; Close takes it to wait for the sender
	tx   txRing

	closed atomic.Bool
	wake   atomic.Bool
	fdMu   sync.RWMutex // Wake holds it shared while writing the eventfd; Close exclusively while closing it

	statsMu              sync.Mutex // guards kernel counter accumulation and fdR use by Stats
	kernelDrops, freezes uint64
	rxFrames, rxBytes    counter
	txFrames, txBytes    counter
	// Frames committed to the transmit ring since the last kick, and
	// their bytes (guarded by txMu): kick adds them to txFrames and
	// txBytes, one counter store per batch rather than per frame.
	txPendFrames, txPendBytes uint64
}

// Open opens a Link on the interface ifname. cfg may be nil. It needs
// CAP_NET_RAW. Errors are *OpError values wrapping ErrNoInterface,
// ErrInterfaceDown (unless Config.AllowDown), ErrNotEthernet, ErrMTU or the
// errno of the failed step (so errors.Is(err, os.ErrPermission) reports a
// missing capability).
//
// Open runs the start-up self-test that decides between the open-block and
// the fallback reader (see Mode); it sends a few frames addressed to the
// interface's own MAC address and target port wire.PortNone, which every
// EtherGM receiver ignores.
func Open(ifname string, cfg *Config) (*Link, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.EtherType == 0 {
		c.EtherType = wire.EtherType
	}
	if c.Ports == 0 {
		c.Ports = AllPorts
	}
	_, c.RxBlocks = rxLayout(&c, 0)
	if c.TxFrames <= 0 {
		c.TxFrames = DefaultTxFrames
	}
	l := &Link{name: ifname, cfg: c, fdR: -1, fdD: -1, fdT: -1, efd: -1, auth: c.Auth}
	if l.auth == nil {
		a, err := AuthFromEnv()
		if err != nil {
			return nil, &OpError{Op: "cluster key", Interface: ifname, Err: err}
		}
		l.auth = a
	}
	switch {
	case c.SpinTime == 0:
		l.spin = DefaultSpinTime
	case c.SpinTime > 0:
		l.spin = c.SpinTime
	}
	l.maxSleep = DefaultMaxSleep
	if c.MaxSleep > 0 {
		l.maxSleep = c.MaxSleep
	}
	if err := l.open(); err != nil {
		l.closeFDs()
		return nil, err
	}
	return l, nil
}

func (l *Link) opErr(op string, err error) error {
	return &OpError{Op: op, Interface: l.name, Err: err}
}

func (l *Link) open() error {
	ifi, err := net.InterfaceByName(l.name)
	if err != nil {
		if strings.Contains(err.Error(), "no such network interface") {
			return l.opErr("lookup", ErrNoInterface)
		}
		return l.opErr("lookup", err)
	}
	if len(ifi.HardwareAddr) != 6 {
		return l.opErr("lookup", ErrNotEthernet)
	}
	if ifi.Flags&net.FlagUp == 0 && !l.cfg.AllowDown {
		// With AllowDown the sockets are bound to the down interface all
		// the same: the kernel hooks them to it when it comes up, as it
		// does after a down/up cycle under an open Link.
		return l.opErr("lookup", ErrInterfaceDown)
	}
	if ifi.MTU < MinMTU {
		return &OpError{Op: "lookup", Interface: l.name, Err: ErrMTU, Detail: strconv.Itoa(ifi.MTU)}
	}
	l.ifindex, l.mtu, l.hw = ifi.Index, ifi.MTU, ifi.HardwareAddr
	l.umtu = l.mtu
	if l.auth != nil {
		l.umtu = l.mtu - auth.TrailerLen
		if l.umtu < MinMTU {
			return &OpError{Op: "lookup", Interface: l.name, Err: ErrMTU, Detail: strconv.Itoa(ifi.MTU) + ", less a cluster-key trailer of " + strconv.Itoa(auth.TrailerLen)}
		}
		l.sealBuf = make([]byte, wire.EthHeaderLen+l.mtu)
	}
	copy(l.mac[:], ifi.HardwareAddr)
	l.bindIndex = l.ifindex
	if lo, err := net.InterfaceByName("lo"); err == nil && lo.Flags&net.FlagLoopback != 0 && lo.Index != l.ifindex {
		l.loIndex, l.bindIndex = lo.Index, 0
	}
	l.saDev = linkAddr(l.ifindex, l.cfg.EtherType)
	l.saLo = linkAddr(l.loIndex, l.cfg.EtherType)

	bs, _ := rxLayout(&l.cfg, l.mtu)
	l.cfg.RxBlockSize = bs

	// Choose the receive path. The self-test uses sockets of its own, so
	// it runs before the Link's sockets exist.
	kind := rxOpenBlock
	why := ""
	switch {
	case l.cfg.V2:
		kind = rxV2
	case l.cfg.DisableOpenBlock:
		kind, why = rxV3Block, "disabled by Config.DisableOpenBlock"
	case os.Getenv(EnvOpenBlock) == "0":
		kind, why = rxV3Block, "disabled by "+EnvOpenBlock+"=0"
	case runtime.GOARCH != "amd64":
		kind, why = rxV2, "open-block reading needs x86-64 memory ordering, GOARCH="+runtime.GOARCH
	default:
		if why = l.selfTest(); why != "" {
			kind = rxV2
		}
	}
	switch kind {
	case rxOpenBlock:
		l.mode = ModeOpenBlock
	case rxV3Block:
		l.mode = ModeBlock + " (fallback: " + why + ")"
	case rxV2:
		l.mode = ModeV2
		if why != "" {
			l.mode += " (fallback: " + why + ")"
		}
	}

	// The doorbell socket is created and bound before the ring socket: the
	// kernel delivers a frame to the newest-bound tap first, so when the
	// doorbell has it, the ring already has it too.
	if kind == rxOpenBlock {
		if l.fdD, err = l.packetSocket("socket (doorbell)", true); err != nil {
			return err
		}
		if err := l.attachFilter(l.fdD, l.filter(1)); err != nil {
			return err
		}
		// The smallest receive buffer: while the reader spins on the
		// ring, the doorbell fills after a frame or two and the kernel
		// then drops its copies early.
		if err := unix.SetsockoptInt(l.fdD, unix.SOL_SOCKET, unix.SO_RCVBUF, 0); err != nil {
			return l.opErr("setsockopt SO_RCVBUF (doorbell)", err)
		}
		if err := l.bindRx(l.fdD, "bind (doorbell)"); err != nil {
			return err
		}
	}

	if l.fdR, err = l.packetSocket("socket", false); err != nil {
		return err
	}
	if err := l.attachFilter(l.fdR, l.filter(acceptAll)); err != nil {
		return err
	}
	l.rx = rxRing{macOff: rxMacOff, etherType: l.cfg.EtherType, noCRC: l.cfg.NoCRCCheck, auth: l.auth, openBlock: kind == rxOpenBlock}
	if kind == rxV2 {
		fs := 2048
		for fs < rxMacOffV2+wire.EthHeaderLen+l.mtu {
			fs *= 2
		}
		bs = (bs + fs - 1) / fs * fs // slots must tile the blocks
		if l.rxMem, err = l.setupRxRingV2(l.fdR, bs, fs, l.cfg.RxBlocks); err != nil {
			return err
		}
		l.rx.v2, l.rx.frameSize, l.rx.nFrames = true, fs, bs/fs*l.cfg.RxBlocks
	} else {
		if l.rxMem, err = l.setupRxRing(l.fdR, bs, l.cfg.RxBlocks, 1); err != nil {
			return err
		}
		l.rx.blockSize, l.rx.nBlocks = bs, l.cfg.RxBlocks
	}
	l.rx.mem = l.rxMem
	if err := l.bindRx(l.fdR, "bind"); err != nil {
		return err
	}

	if err := l.setupTx(); err != nil {
		return err
	}
	if l.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return l.opErr("eventfd", err)
	}
	l.pfds[0] = unix.PollFd{Fd: int32(l.efd), Events: unix.POLLIN}
	l.pfds[1] = unix.PollFd{Fd: int32(l.fdR), Events: unix.POLLIN}
	l.npfd = 2
	if l.fdD >= 0 {
		l.pfds[2] = unix.PollFd{Fd: int32(l.fdD), Events: unix.POLLIN}
		l.npfd = 3
	}
	return nil
}

// Receive paths.
const (
	rxOpenBlock = iota // V3 ring, open block read (x86-64, self-tested)
	rxV3Block          // V3 ring, closed blocks only (documented; RetireTimeout latency)
	rxV2               // V2 ring, per-frame status (documented)
)

// packetSocket creates an AF_PACKET SOCK_RAW socket with protocol 0, so
// that it receives nothing until bind(2) names the protocol: the filter and
// the ring are in place before the first frame arrives.
func (l *Link) packetSocket(op string, nonblock bool) (int, error) {
	flags := unix.SOCK_RAW | unix.SOCK_CLOEXEC
	if nonblock {
		flags |= unix.SOCK_NONBLOCK
	}
	fd, err := unix.Socket(unix.AF_PACKET, flags, 0)
	if err != nil {
		return -1, l.opErr(op, err)
	}
	return fd, nil
}

func (l *Link) attachFilter(fd int, spec filterSpec) error {
	raw, err := bpf.Assemble(buildFilter(spec))
	if err != nil {
		return l.opErr("assemble BPF filter", err)
	}
	prog := unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		return l.opErr("setsockopt SO_ATTACH_FILTER", err)
	}
	return nil
}

// filter returns the receive filter of the Link's sockets with the accept
// value snap.
func (l *Link) filter(snap uint32) filterSpec {
	return filterSpec{etherType: l.cfg.EtherType, ports: l.cfg.Ports, port: -1, mac: l.mac,
		ifindex: l.ifindex, loIndex: l.loIndex, snap: snap}
}

// bindRx binds a receiving socket to the EtherType on bindIndex. It is
// not an ETH_P_ALL tap: the kernel does not clone the host's outgoing
// frames for it.
func (l *Link) bindRx(fd int, op string) error {
	return l.bindIf(fd, htons(l.cfg.EtherType), l.bindIndex, op)
}

// linkAddr returns the sockaddr_ll that sends a frame of etherType on the
// interface ifindex.
func linkAddr(ifindex int, etherType uint16) unix.RawSockaddrLinklayer {
	return unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(etherType), Ifindex: int32(ifindex), Halen: 6}
}

func (l *Link) bind(fd int, proto uint16, op string) error {
	return l.bindIf(fd, proto, l.ifindex, op)
}

func (l *Link) bindIf(fd int, proto uint16, ifindex int, op string) error {
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex}); err != nil {
		if errors.Is(err, unix.ENETDOWN) {
			return l.opErr(op, ErrInterfaceDown)
		}
		if errors.Is(err, unix.ENODEV) {
			return l.opErr(op, ErrNoInterface)
		}
		return l.opErr(op, err)
	}
	return nil
}

// setupRxRing switches fd to TPACKET_V3 and maps an RX ring of n blocks of
// bs bytes with the given retire timeout (ms).
func (l *Link) setupRxRing(fd, bs, n, tovMs int) ([]byte, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return nil, &OpError{Op: "setsockopt PACKET_VERSION", Interface: l.name, Err: err, Detail: "TPACKET_V3, Linux >= 3.2"}
	}
	fs := rxFrameHint
	if fs > bs {
		fs = bs
	}
	req := unix.TpacketReq3{
		Block_size:     uint32(bs),
		Block_nr:       uint32(n),
		Frame_size:     uint32(fs),
		Frame_nr:       uint32(bs / fs * n),
		Retire_blk_tov: uint32(tovMs),
	}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, &OpError{Op: "setsockopt PACKET_RX_RING", Interface: l.name, Err: err,
			Detail: strconv.Itoa(n) + " blocks of " + strconv.Itoa(bs) + " bytes"}
	}
	mem, err := unix.Mmap(fd, 0, bs*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, &OpError{Op: "mmap RX ring", Interface: l.name, Err: err}
	}
	return mem, nil
}

// setupRxRingV2 switches fd to TPACKET_V2 and maps an RX ring of n blocks
// of bs bytes, cut in slots of fs bytes.
func (l *Link) setupRxRingV2(fd, bs, fs, n int) ([]byte, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, &OpError{Op: "setsockopt PACKET_VERSION", Interface: l.name, Err: err, Detail: "TPACKET_V2"}
	}
	req := unix.TpacketReq{Block_size: uint32(bs), Block_nr: uint32(n), Frame_size: uint32(fs), Frame_nr: uint32(bs / fs * n)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, &OpError{Op: "setsockopt PACKET_RX_RING", Interface: l.name, Err: err,
			Detail: "TPACKET_V2, " + strconv.Itoa(n) + " blocks of " + strconv.Itoa(bs) + " bytes"}
	}
	mem, err := unix.Mmap(fd, 0, bs*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, &OpError{Op: "mmap RX ring", Interface: l.name, Err: err}
	}
	return mem, nil
}

// setupTx creates the TX-ring socket T: bound with protocol 0 (it receives
// nothing), TPACKET_V3 fixed slots, PACKET_LOSS (a rejected frame is
// skipped instead of blocking the ring) and optionally PACKET_QDISC_BYPASS.
func (l *Link) setupTx() error {
	fd, err := l.packetSocket("socket (TX ring)", false)
	if err != nil {
		return err
	}
	l.fdT = fd
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return &OpError{Op: "setsockopt PACKET_VERSION (TX ring)", Interface: l.name, Err: err, Detail: "TPACKET_V3"}
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_LOSS, 1); err != nil {
		return l.opErr("setsockopt PACKET_LOSS", err)
	}
	if l.cfg.QdiscBypass {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return &OpError{Op: "setsockopt PACKET_QDISC_BYPASS", Interface: l.name, Err: err, Detail: "Linux >= 3.14"}
		}
	}
	// With PACKET_VNET_HDR the kernel copies a short frame whole into the
	// socket buffer (see vnetHdrLen); without it (refused: an old kernel)
	// the ring works as before.
	vnet := 0
	if unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1) == nil {
		vnet = vnetHdrLen
	}
	fs := txFrameSize(vnet, l.mtu)
	bs := txBlockSize
	if bs < fs {
		bs = fs
	}
	perBlock := bs / fs
	blocks := (l.cfg.TxFrames + perBlock - 1) / perBlock
	req := unix.TpacketReq3{Block_size: uint32(bs), Block_nr: uint32(blocks), Frame_size: uint32(fs), Frame_nr: uint32(blocks * perBlock)}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
		return &OpError{Op: "setsockopt PACKET_TX_RING", Interface: l.name, Err: err, Detail: "TPACKET_V3 TX ring, Linux >= 4.11"}
	}
	if l.txMem, err = unix.Mmap(fd, 0, bs*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return &OpError{Op: "mmap TX ring", Interface: l.name, Err: err}
	}
	l.tx = txRing{mem: l.txMem, frameSize: fs, nFrames: blocks * perBlock, vnet: vnet}
	return l.bind(fd, 0, "bind (TX ring)")
}

// HardwareAddr returns the interface's MAC address. The caller must not
// modify it.
func (l *Link) HardwareAddr() net.HardwareAddr { return l.hw }

// MTU returns the interface MTU at Open time: the largest frame is
// MTU()+14 bytes. With a cluster key it is the interface MTU less
// auth.TrailerLen, which the sealed frames need.
func (l *Link) MTU() int { return l.umtu }

// Name returns the interface name.
func (l *Link) Name() string { return l.name }

// Mode returns the receive path: ModeOpenBlock, ModeV2, or ModeV2 or
// ModeBlock followed by the reason for the fallback, as in
// "v2-ring (fallback: <reason>)".
func (l *Link) Mode() string { return l.mode }

// TxSlotSize returns the capacity of a transmit-ring slot (the length of
// the slices TxSlot returns).
func (l *Link) TxSlotSize() int { return l.tx.frameSize - txDataOff - l.tx.vnet }

// Recv fills frames with views of received, checked frames and returns how
// many it filled; it does not sleep (it may spin for up to 50 us on a frame
// the kernel is still copying). The views point into the receive ring:
// they stay valid until the next Recv or Wait call (or Close), and the
// caller must not modify them. It returns 0 on a closed Link.
func (l *Link) Recv(frames [][]byte) int {
	l.rxMu.Lock()
	defer l.rxMu.Unlock()
	return l.RecvOwned(frames)
}

// RecvIdle is Endpoint's (CapIdle): it reports, with a few loads of the
// ring and without the receive mutex, that Recv would return 0 now (also
// on a closed Link). The caller must own the receive side: no Recv, Wait
// or Close may run concurrently.
func (l *Link) RecvIdle() bool {
	return l.closed.Load() || l.rx.quiet()
}

// RecvOwned is Endpoint's (CapOwnedReceive): Recv without the receive
// mutex, for a caller that owns the receive side (no Recv, Wait or Close
// may run concurrently).
func (l *Link) RecvOwned(frames [][]byte) int {
	if l.closed.Load() || l.rx.idle() {
		return 0
	}
	return l.recvLocked(frames)
}

func (l *Link) recvLocked(frames [][]byte) int {
	r := &l.rx
	r.begin()
	n, bytes := 0, 0
	for n < len(frames) {
		f := r.next()
		if f == nil {
			break
		}
		frames[n] = f
		n++
		bytes += len(f)
	}
	if n > 0 {
		l.rxFrames.add(uint64(n))
		l.rxBytes.add(uint64(bytes))
	}
	return n
}

// Wait is Recv that waits for frames: it spins on the ring for
// Config.SpinTime, then sleeps in poll(2) until a frame arrives, Wake is
// called, timeout passes or the Link is closed. It returns (n, nil) with
// n > 0 frames, (0, nil) on timeout or Wake (or, rarely, spuriously), and
// (0, ErrClosed) if the Link is or gets closed. A timeout of 0 makes it a
// Recv; a negative timeout waits without limit. The views are valid until
// the next Recv or Wait call.
func (l *Link) Wait(frames [][]byte, timeout time.Duration) (int, error) {
	l.rxMu.Lock()
	defer l.rxMu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if n := l.recvLocked(frames); n > 0 || timeout == 0 || len(frames) == 0 {
		return n, nil
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if l.spin > 0 {
		end := time.Now().Add(l.spin)
		if !deadline.IsZero() && deadline.Before(end) {
			end = deadline
		}
		if n, done, err := l.spinUntil(frames, end); done {
			return n, err
		}
	}
	fresh := false // the last poll returned because the doorbell rang
	for {
		if l.closed.Load() {
			return 0, ErrClosed
		}
		if l.wake.Swap(false) {
			l.drain(l.efd)
			return 0, nil
		}
		// Drain the doorbell before looking at the ring: a frame that
		// arrives after this rings it again. Entries left from frames
		// already read (Recv does not drain) only matter when fresh.
		if l.fdD >= 0 {
			l.drain(l.fdD)
		}
		if n := l.recvLocked(frames); n > 0 {
			return n, nil
		}
		if fresh || l.rx.busy() {
			if n, done, err := l.spinUntil(frames, time.Now().Add(doorbellGrace)); done {
				return n, err
			}
		}
		wait := l.maxSleep
		if !deadline.IsZero() {
			rem := time.Until(deadline)
			if rem <= 0 {
				return 0, nil
			}
			if rem < wait {
				wait = rem
			}
		}
		l.ts = unix.NsecToTimespec(int64(wait))
		for i := range l.pfds {
			l.pfds[i].Revents = 0
		}
		_, err := unix.Ppoll(l.pfds[:l.npfd], &l.ts, nil)
		if err != nil && err != unix.EINTR {
			return 0, &OpError{Op: "poll", Interface: l.name, Err: err}
		}
		for i := 1; i < l.npfd; i++ {
			if l.pfds[i].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				l.clearSocketError(int(l.pfds[i].Fd))
			}
		}
		fresh = l.npfd > 2 && l.pfds[2].Revents&unix.POLLIN != 0
		if l.pfds[0].Revents&unix.POLLIN != 0 {
			l.drain(l.efd)
			if l.closed.Load() {
				return 0, ErrClosed
			}
			if l.wake.Swap(false) {
				if n := l.recvLocked(frames); n > 0 {
					return n, nil
				}
				return 0, nil
			}
		}
	}
}

// spinUntil polls the ring until end. done reports that Wait must return
// (n, err).
func (l *Link) spinUntil(frames [][]byte, end time.Time) (n int, done bool, err error) {
	for i := 0; ; i++ {
		if !l.rx.idle() {
			if n := l.recvLocked(frames); n > 0 {
				return n, true, nil
			}
		}
		if l.closed.Load() {
			return 0, true, ErrClosed
		}
		if l.wake.Swap(false) {
			l.drain(l.efd)
			return 0, true, nil
		}
		if i&15 == 15 && !time.Now().Before(end) {
			return 0, false, nil
		}
	}
}

// drain reads a non-blocking fd (doorbell or eventfd) until it is empty and
// reports whether it held anything.
func (l *Link) drain(fd int) bool {
	got := false
	for i := 0; i < 64; i++ {
		n, err := unix.Read(fd, l.buf[:])
		if err != nil || n <= 0 {
			break
		}
		got = true
	}
	return got
}

// clearSocketError reads (and so clears) SO_ERROR, e.g. ENETDOWN after the
// interface went down, so that poll does not keep reporting it.
func (l *Link) clearSocketError(fd int) {
	if _, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil {
		// A closed or invalid descriptor: avoid a busy loop.
		time.Sleep(time.Millisecond)
	}
}

// Wake makes a concurrent (or the next) Wait return (0, nil) early. It is
// safe to call from any goroutine, also on a closed Link.
func (l *Link) Wake() {
	l.fdMu.RLock()
	defer l.fdMu.RUnlock()
	if l.closed.Load() {
		return
	}
	l.wake.Store(true)
	l.kickEventfd()
}

func (l *Link) kickEventfd() {
	var one [8]byte
	*(*uint64)(unsafe.Pointer(&one[0])) = 1
	unix.Write(l.efd, one[:])
}

// isSelf reports whether frame is addressed to this interface's own MAC.
func (l *Link) isSelf(frame []byte) bool {
	return len(frame) >= 6 && [6]byte(frame[0:6]) == l.mac
}

func (l *Link) checkSize(frame []byte) error {
	if len(frame) < wire.EthHeaderLen || len(frame) > wire.EthHeaderLen+l.umtu {
		return ErrFrameSize
	}
	return nil
}

// Send transmits one frame now with sendto(2) on the ring socket. The
// frame is a complete Ethernet frame (the caller fills in the source MAC);
// it is not retained. Frames addressed to the interface's own MAC go
// through the loopback interface and reach the Links of this host on the
// interface whose port mask matches (this one too). EAGAIN and ENOBUFS
// are retried a bounded number of times, then ErrTxBusy is returned.
func (l *Link) Send(frame []byte) error {
	l.txMu.Lock()
	defer l.txMu.Unlock()
	return l.SendOwned(frame)
}

func (l *Link) sendLocked(frame []byte) error {
	sa := &l.saDev
	if l.isSelf(frame) {
		if l.loIndex == 0 {
			return &OpError{Op: "send", Interface: l.name, Err: ErrNoLoopback}
		}
		sa = &l.saLo
	}
	for i := 0; ; i++ {
		err := sendto(l.fdR, frame, sa)
		if err == nil {
			l.txFrames.add(1)
			l.txBytes.add(uint64(len(frame)))
			return nil
		}
		if err == unix.EINTR || (err == unix.ENETDOWN && i == 0) {
			// A first ENETDOWN may be the socket's pending error from an
			// earlier down event (reported once by the next send); if the
			// interface is still down the retry fails again.
			continue
		}
		if err != unix.EAGAIN && err != unix.ENOBUFS {
			return &OpError{Op: "send", Interface: l.name, Err: err}
		}
		if i >= txRetries {
			return &OpError{Op: "send", Interface: l.name, Err: ErrTxBusy, Detail: err.Error()}
		}
		backoff(i)
	}
}

// sendto sends frame on fd to the address sa (one system call, no
// allocation). MSG_DONTWAIT: it never sleeps (a full socket buffer is
// EAGAIN, which the callers retry), so it is a raw system call (rawSendto).
func sendto(fd int, frame []byte, sa *unix.RawSockaddrLinklayer) error {
	return rawSendto(fd, unsafe.Pointer(&frame[0]), len(frame), unsafe.Pointer(sa), unix.SizeofSockaddrLinklayer)
}

// rawSendto is sendto(2) with MSG_DONTWAIT as a raw system call: without
// the runtime's entersyscall and exitsyscall around it. Those cost time on
// every call, and while the kernel runs a long call (a kick of the
// transmit ring delivers every queued frame through veth within it) the
// runtime's monitor hands the goroutine's P to another thread, which takes
// two context switches per call on the sender's CPU. A raw call must not
// block: with MSG_DONTWAIT an AF_PACKET send never sleeps (no socket
// buffer or ring slot free is EAGAIN or ENOBUFS, a stopped queue is
// ENOBUFS), so the worst a raw call holds up is a stop-the-world pause by
// the time the kernel takes to transmit one batch.
func rawSendto(fd int, p unsafe.Pointer, n int, sa unsafe.Pointer, salen uintptr) error {
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(p), uintptr(n),
		unix.MSG_DONTWAIT, uintptr(sa), salen)
	if e != 0 {
		return e
	}
	return nil
}

// backoff pauses before retry i: yields first, then sleeps briefly.
func backoff(i int) {
	if i < 4 {
		runtime.Gosched()
		return
	}
	time.Sleep(time.Duration(10<<min(i-4, 8)) * time.Microsecond)
}

// SendBatch queues frames on the transmit ring and starts their
// transmission with one system call. It returns how many frames were
// queued (in order); on error the rest were not sent. Frames addressed to
// the interface's own MAC are sent through the loopback interface with
// sendto(2) instead (see Send). The frames are copied; the caller may reuse them at once.
func (l *Link) SendBatch(frames [][]byte) (int, error) {
	l.txMu.Lock()
	defer l.txMu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	for i, f := range frames {
		if err := l.checkSize(f); err != nil {
			err2 := l.kick()
			if err2 != nil {
				return i, err2
			}
			return i, err
		}
		if l.isSelf(f) {
			if err := l.sendLocked(l.sealCopy(f)); err != nil {
				return i, err
			}
			continue
		}
		s, err := l.txSlotWait()
		if err != nil {
			return i, err
		}
		n := copy(s, f)
		if l.auth != nil {
			if m := l.auth.Seal(s); m > 0 {
				n = m
			}
		}
		l.commitLocked(s[:n])
	}
	return len(frames), l.kick()
}

// txSlotWait returns the head slot, kicking the kernel and waiting a
// bounded time if the ring is full.
func (l *Link) txSlotWait() ([]byte, error) {
	for i := 0; ; i++ {
		if s := l.tx.slot(); s != nil {
			return s, nil
		}
		if err := l.kick(); err != nil {
			return nil, err
		}
		if i >= txRetries {
			return nil, &OpError{Op: "TX ring", Interface: l.name, Err: ErrTxBusy}
		}
		if i > 0 {
			backoff(i)
		}
	}
}

func (l *Link) commitLocked(frame []byte) {
	l.tx.commit(len(frame))
	l.txPendFrames++
	l.txPendBytes += uint64(len(frame))
}

// kick asks the kernel to send every queued slot: sendto(fd, NULL, 0,
// MSG_DONTWAIT).
func (l *Link) kick() error {
	if l.tx.queued == 0 {
		return nil
	}
	if l.txPendFrames > 0 {
		l.txFrames.add(l.txPendFrames)
		l.txBytes.add(l.txPendBytes)
		l.txPendFrames, l.txPendBytes = 0, 0
	}
	for i := 0; ; i++ {
		err := rawSendto(l.fdT, nil, 0, nil, 0)
		if err == nil {
			l.tx.queued = 0
			return nil
		}
		if err == unix.EINTR || (err == unix.ENETDOWN && i == 0) {
			continue // see sendLocked
		}
		if err != unix.EAGAIN && err != unix.ENOBUFS {
			return &OpError{Op: "sendto (TX ring)", Interface: l.name, Err: err}
		}
		if i >= txRetries {
			return &OpError{Op: "sendto (TX ring)", Interface: l.name, Err: ErrTxBusy, Detail: err.Error()}
		}
		backoff(i)
	}
}

// TxSlot returns the next free transmit-ring slot for building a frame in
// place (zero copy), or nil if the ring is full (call Flush and retry) or
// the Link is closed. The slice has TxSlotSize bytes; write the frame at
// its start and call TxCommit with its length. Call Flush to start
// transmission of the committed frames. Sender goroutine only.
func (l *Link) TxSlot() []byte {
	l.txMu.Lock()
	defer l.txMu.Unlock()
	if l.closed.Load() {
		return nil
	}
	return l.tx.slot()
}

// TxCommit queues the first n bytes of the slot last returned by TxSlot as
// a frame. A frame addressed to the interface's own MAC is sent at once
// through the loopback interface (see Send) and the slot stays free. n <= 0 abandons the slot.
func (l *Link) TxCommit(n int) error {
	l.txMu.Lock()
	defer l.txMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	return l.txCommitLocked(n)
}

// TxCommitNext is TxCommit followed by TxSlot, with one lock round trip:
// it queues the first n bytes of the slot last lent as a frame and lends
// the next slot (nil if the ring is full: Flush, then TxSlot). A frame
// builder that fills a batch of slots pays one lock per frame instead of
// two. The slot it returns is valid only until the next send call of any
// kind. Sender goroutine only.
func (l *Link) TxCommitNext(n int) ([]byte, error) {
	l.txMu.Lock()
	defer l.txMu.Unlock()
	if l.closed.Load() {
		return nil, ErrClosed
	}
	if err := l.txCommitLocked(n); err != nil {
		return nil, err
	}
	return l.tx.slot(), nil
}

func (l *Link) txCommitLocked(n int) error {
	if n <= 0 {
		return nil
	}
	s := l.tx.slot()
	if s == nil || n > len(s) {
		return ErrFrameSize
	}
	if err := l.checkSize(s[:n]); err != nil {
		return err
	}
	if l.auth != nil {
		if m := l.auth.Seal(s[:n+auth.TrailerLen]); m > 0 {
			n = m
		}
	}
	if l.isSelf(s) {
		return l.sendLocked(s[:n])
	}
	l.commitLocked(s[:n])
	return nil
}

// Flush starts transmission of the frames committed with TxCommit (one
// system call).
func (l *Link) Flush() error {
	l.txMu.Lock()
	defer l.txMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	return l.kick()
}

// Stats returns the Link's counters. It is safe to call from any goroutine.
func (l *Link) Stats() Stats {
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	if !l.closed.Load() {
		l.pollKernelStats()
	}
	return Stats{
		RxFrames:         l.rxFrames.load(),
		RxBytes:          l.rxBytes.load(),
		TxFrames:         l.txFrames.load(),
		TxBytes:          l.txBytes.load(),
		KernelDrops:      l.kernelDrops,
		QueueFreezes:     l.freezes,
		CRCErrors:        l.rx.crcErrors.load(),
		Malformed:        l.rx.malformed.load(),
		AuthFailures:     l.rx.authFailures.load(),
		ForeignPartition: l.rx.foreignPartition.load(),
		Mode:             l.mode,
	}
}

// pollKernelStats adds PACKET_STATISTICS (which resets on read) to the
// accumulated kernel counters. statsMu must be held.
func (l *Link) pollKernelStats() {
	if l.fdR < 0 {
		return
	}
	st, err := unix.GetsockoptTpacketStatsV3(l.fdR, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return
	}
	l.kernelDrops += uint64(st.Drops)
	l.freezes += uint64(st.Freeze_q_cnt)
}

// Close closes the Link. It makes a concurrent Wait return ErrClosed,
// waits until the receiving and sending goroutines have left the Link's
// methods, then unmaps the rings (views returned by Recv become invalid)
// and closes the sockets. It is idempotent and safe from any goroutine.
func (l *Link) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	// Wake a Wait sleeping in poll; it sees closed and leaves.
	l.fdMu.RLock()
	l.kickEventfd()
	l.fdMu.RUnlock()
	l.rxMu.Lock()
	defer l.rxMu.Unlock()
	l.txMu.Lock()
	defer l.txMu.Unlock()
	l.statsMu.Lock()
	l.pollKernelStats()
	l.statsMu.Unlock()
	l.fdMu.Lock()
	defer l.fdMu.Unlock()
	l.closeFDs()
	return nil
}

// closeFDs releases every resource; the locks are held (or the Link was
// never shared).
func (l *Link) closeFDs() {
	for _, fd := range []*int{&l.fdD, &l.fdR, &l.fdT, &l.efd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	if l.rxMem != nil {
		unix.Munmap(l.rxMem)
		l.rxMem, l.rx.mem = nil, nil
	}
	if l.txMem != nil {
		unix.Munmap(l.txMem)
		l.txMem, l.tx.mem = nil, nil
	}
}

// RingFrames returns how many full-size frames of an interface with the
// given MTU the receive ring of cfg (nil: the defaults) holds, as Open lays
// out a TPACKET_V3 ring (the default mode; Link.Geometry gives the ring a
// Link has): the bound a sender's window must respect so that one stream
// cannot overflow the ring of a receiver that is busy elsewhere.
func RingFrames(cfg *Config, mtu int) int {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	bs, nb := rxLayout(&c, mtu)
	return v3Frames(bs, nb, mtu)
}

// rxLayout returns the block size and the number of blocks of the receive
// ring Open lays out for c and an interface of the given MTU (RingFrames
// and RingMemory use it too): RxBlockSize (0: DefaultRxBlockSize) grown to
// hold a block descriptor and one full frame and rounded up to a page;
// RxBlocks (0: DefaultRxBlocks), at least 2.
func rxLayout(c *Config, mtu int) (bs, nb int) {
	bs, nb = c.RxBlockSize, c.RxBlocks
	if bs == 0 {
		bs = DefaultRxBlockSize
	}
	if nb == 0 {
		nb = DefaultRxBlocks
	}
	nb = max(nb, 2)
	if need := bdSize + rxMacOff + wire.EthHeaderLen + mtu + v3Align; bs < need {
		bs = need
	}
	page := os.Getpagesize()
	return (bs + page - 1) / page * page, nb
}

// v3Frames is how many frames of an interface with the given MTU a
// TPACKET_V3 ring of nb blocks of bs bytes holds.
func v3Frames(bs, nb, mtu int) int {
	per := (rxMacOff + wire.EthHeaderLen + mtu + v3Align - 1) &^ (v3Align - 1)
	return (bs - bdSize) / per * nb
}

// Geometry returns the geometry of the Link's rings: the full-size frames
// (of the interface MTU, cluster-key trailer included) its receive ring
// holds, its transmit slots, and DefaultZeroCopyMin.
func (l *Link) Geometry() Geometry {
	g := Geometry{TxFrames: l.tx.nFrames, ZeroCopyMin: DefaultZeroCopyMin}
	if l.rx.v2 {
		g.RxFrames = l.rx.nFrames
	} else if l.rx.nBlocks > 0 {
		g.RxFrames = v3Frames(l.rx.blockSize, l.rx.nBlocks, l.mtu)
	}
	return g
}
