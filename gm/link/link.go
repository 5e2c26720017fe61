package link

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ethergm/ethergm/wire"
	"github.com/ethergm/ethergm/wire/auth"
)

// PortMask selects target ports: bit p accepts frames whose target port
// (frame offset 16) is p. Only ports 0..31 can be selected; frames with a
// target port of 32 or more (such as wire.PortNone, used by the start-up
// self-test) never reach a Link.
type PortMask uint32

// AllPorts accepts every target port from 0 to 31. Capture, mapper and relay
// tools use it.
const AllPorts PortMask = 0xFFFFFFFF

// Has reports whether m accepts target port p.
func (m PortMask) Has(p uint8) bool { return p < 32 && m&(1<<p) != 0 }

// Defaults used when the corresponding Config field is zero.
const (
	// DefaultSpinTime is how long Wait spins on the receive ring before it
	// sleeps in the kernel.
	DefaultSpinTime = 50 * time.Microsecond
	// DefaultMaxSleep is the longest single sleep in the kernel in Wait
	// (Config.MaxSleep) and MultiWait.
	DefaultMaxSleep = 100 * time.Millisecond
	// DefaultRxBlockSize is the size of one TPACKET_V3 receive block.
	DefaultRxBlockSize = 128 << 10
	// DefaultRxBlocks is the number of receive blocks (8 MiB of ring with
	// DefaultRxBlockSize).
	DefaultRxBlocks = 64
	// DefaultTxFrames is the number of slots in the transmit ring used by
	// SendBatch and TxSlot.
	DefaultTxFrames = 256
	// RetireTimeout is the TPACKET_V3 block retire timeout: the longest a
	// received frame waits in an open block before the kernel hands the
	// block over (the kernel's minimum, 1 ms).
	RetireTimeout = time.Millisecond
)

// MinMTU is the smallest interface MTU a Link accepts: a full EtherGM header
// with the remote address extension and one byte of payload.
const MinMTU = wire.MaxHeaderLen + 1

// Mode strings reported by Link.Mode.
const (
	// ModeOpenBlock means received frames are read out of the kernel's
	// still-open TPACKET_V3 block as soon as the kernel has copied them
	// (x86-64 only, verified by the start-up self-test).
	ModeOpenBlock = "v3-open-block"
	// ModeBlock is the prefix of the documented fallback mode: a block is
	// read only after the kernel has retired it, which costs up to
	// RetireTimeout of latency for a lone frame. Link.Mode appends the
	// reason for the fallback, as in "v3-block (fallback: <reason>)".
	ModeBlock = "v3-block"
	// ModeV2 means a TPACKET_V2 ring is read frame by frame (documented
	// per-frame hand-off, same latency as ModeOpenBlock, fixed-size
	// slots). It is chosen by Config.V2, and when the open-block self-test
	// fails or cannot run (not x86-64): then Link.Mode appends the reason,
	// as in "v2-ring (fallback: <reason>)".
	ModeV2 = "v2-ring"
)

// EnvOpenBlock names an environment variable: when it is "0", every Link
// uses the fallback mode, as if Config.DisableOpenBlock were set.
const EnvOpenBlock = "ETHERGM_LINK_OPENBLOCK"

// Config tunes a Link. The zero value (or a nil *Config) selects the
// defaults.
type Config struct {
	// EtherType is the EtherType to send and accept; 0 means wire.EtherType.
	EtherType uint16
	// Ports selects the target ports this Link receives; 0 means AllPorts.
	Ports PortMask
	// SpinTime is how long Wait spins on the ring before sleeping in the
	// kernel: 0 means DefaultSpinTime, a negative value means never spin.
	SpinTime time.Duration
	// MaxSleep is the longest single sleep in the kernel in Wait; 0 means
	// DefaultMaxSleep. A frame the doorbell failed to announce still wakes
	// Wait within RetireTimeout, when the kernel retires its block, so
	// the cap only guards against the unforeseen; but each capped wake-up
	// costs an idle process a thread switch and the Go runtime's polling
	// after it, which a daemon that waits idle for long (gm_mapper's
	// closed-port answerer) saves with a longer cap.
	MaxSleep time.Duration
	// QdiscBypass sets PACKET_QDISC_BYPASS on the transmit-ring socket used
	// by SendBatch and Flush: faster, but those frames skip tc, are dropped
	// rather than queued when the driver queue is full, and are invisible to
	// local packet sockets (tcpdump). Send is never affected.
	QdiscBypass bool
	// DisableOpenBlock forces the documented block-level fallback reader
	// (up to RetireTimeout of receive latency).
	DisableOpenBlock bool
	// V2 selects a TPACKET_V2 receive ring (ModeV2) without trying the
	// open-block reader. The ring has RxBlocks blocks of RxBlockSize bytes
	// cut in fixed slots of the next power of two >= 66+14+MTU bytes.
	V2 bool
	// NoCRCCheck delivers frames whose CRC32C does not match (tests only).
	NoCRCCheck bool
	// RxBlockSize is the receive block size in bytes, rounded up to a
	// multiple of the page size and to at least one maximum-size frame;
	// 0 means DefaultRxBlockSize.
	RxBlockSize int
	// RxBlocks is the number of receive blocks (at least 2); 0 means
	// DefaultRxBlocks.
	RxBlocks int
	// TxFrames is the number of transmit-ring slots, rounded up to fill
	// whole ring blocks; 0 means DefaultTxFrames.
	TxFrames int
	// Auth, if set, is the cluster key (docs/SECURITY.md): every frame
	// sent is sealed (wire.FlagAuth, a trailer with the partition and a
	// MAC after the payload) and every frame received must carry a valid
	// trailer of Auth's partition, which is checked and stripped before
	// Recv and Wait return the frame; others are dropped and counted
	// (Stats.AuthFailures, Stats.ForeignPartition). MTU then reports
	// auth.TrailerLen bytes less than the interface's. If Auth is nil,
	// Open takes the key from the file EnvClusterKeyFile names, if set
	// (partition: EnvPartition); without either, frames are neither sealed
	// nor checked.
	Auth *auth.Authenticator
	// AllowDown makes Open accept an interface that is administratively
	// down instead of failing with ErrInterfaceDown. The Link is then one
	// whose interface went down after Open: Running reports false, sends
	// fail with ENETDOWN and nothing arrives, until the interface comes up
	// and the kernel hooks its sockets to it again. A GM port opens the
	// down rails of a unit of several interfaces so (gm.Unit); anything
	// else, such as a tool that opens one Link, needs its interface up.
	AllowDown bool
}

// Environment variables read by Open when Config.Auth is nil.
const (
	// EnvClusterKeyFile names a cluster key file (auth.ParseKeyFile: one
	// secret per line; a second line during a key rotation).
	EnvClusterKeyFile = "ETHERGM_CLUSTER_KEY_FILE"
	// EnvPartition is the partition number (0..65535, decimal or 0x hex)
	// used with EnvClusterKeyFile; unset means 0.
	EnvPartition = "ETHERGM_PARTITION"
)

// LoadAuth reads the cluster key file at path and returns an Authenticator
// for partition.
func LoadAuth(path string, partition uint16) (*auth.Authenticator, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	keys, err := auth.ParseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return auth.New(partition, keys...)
}

// AuthFromEnv returns the Authenticator that EnvClusterKeyFile and
// EnvPartition describe, or nil if EnvClusterKeyFile is unset or empty.
func AuthFromEnv() (*auth.Authenticator, error) {
	path := os.Getenv(EnvClusterKeyFile)
	if path == "" {
		return nil, nil
	}
	var part uint64
	if s := os.Getenv(EnvPartition); s != "" {
		var err error
		if part, err = strconv.ParseUint(s, 0, 16); err != nil {
			return nil, fmt.Errorf("%s=%q: a partition is a number from 0 to 65535", EnvPartition, s)
		}
	}
	return LoadAuth(path, uint16(part))
}

// Stats are the counters of a Link. Counters only grow.
type Stats struct {
	// RxFrames and RxBytes count the frames delivered by Recv and Wait.
	RxFrames, RxBytes uint64
	// TxFrames and TxBytes count the frames handed to the kernel by Send,
	// SendBatch and TxCommit.
	TxFrames, TxBytes uint64
	// KernelDrops counts frames the kernel accepted for this Link but could
	// not store because the receive ring was full (PACKET_STATISTICS).
	KernelDrops uint64
	// QueueFreezes counts how often the kernel found the ring full of
	// blocks not yet released by the reader (PACKET_STATISTICS).
	QueueFreezes uint64
	// CRCErrors counts frames dropped because their CRC32C did not match.
	CRCErrors uint64
	// Malformed counts frames dropped because they were not well-formed
	// EtherGM frames (version, type, lengths) or because the ring held
	// inconsistent offsets.
	Malformed uint64
	// AuthFailures counts frames dropped by a Link with a cluster key
	// (Config.Auth) because they carried no trailer or a bad MAC: frames
	// of hosts without the key, forged or altered frames (a corrupted
	// trailer lands here too, other corruption in CRCErrors).
	AuthFailures uint64
	// ForeignPartition counts frames dropped by a Link with a cluster key
	// because their trailer named another partition.
	ForeignPartition uint64
	// Mode is Link.Mode.
	Mode string
}

// Sentinel errors. Errors returned by Open wrap one of them, or an errno,
// in an *OpError.
var (
	// ErrClosed is returned by the methods of a closed Link, and by a Wait
	// that was interrupted by Close.
	ErrClosed = errors.New("link: closed")
	// ErrNoInterface means the named interface does not exist in the
	// current network namespace.
	ErrNoInterface = errors.New("link: no such interface")
	// ErrInterfaceDown means the interface is administratively down.
	ErrInterfaceDown = errors.New("link: interface is down")
	// ErrNotEthernet means the interface has no 6-byte MAC address (e.g.
	// the loopback interface).
	ErrNotEthernet = errors.New("link: not an Ethernet interface")
	// ErrMTU means the interface MTU is smaller than MinMTU.
	ErrMTU = errors.New("link: interface MTU too small")
	// ErrFrameSize is returned by Send and SendBatch for a frame shorter
	// than an Ethernet header or longer than the interface MTU allows.
	ErrFrameSize = errors.New("link: frame size out of range")
	// ErrTxBusy is returned by Send, SendBatch and Flush when the kernel
	// kept refusing frames (EAGAIN, ENOBUFS) or the transmit ring stayed
	// full after bounded retries. The frames not reported as sent may be
	// retried; the GM layer's retransmission covers them.
	ErrTxBusy = errors.New("link: transmit queue full")
	// ErrNoLoopback is returned by the send methods for a frame addressed
	// to the interface's own MAC when the network namespace has no
	// loopback interface: such frames reach the host's other Links
	// through lo ("ip link set lo up").
	ErrNoLoopback = errors.New("link: frames to this host need the loopback interface lo")
	// ErrNotSupported is returned by Open on systems without AF_PACKET.
	ErrNotSupported = errors.New("link: not supported on this system")
)

// OpError is the error type returned by Open (and by the data-path methods
// for system call failures). Err is a sentinel of this package or an errno
// (syscall.Errno), so errors.Is(err, os.ErrPermission) and
// errors.Is(err, ErrNoInterface) work on it.
type OpError struct {
	// Op names the failed step, e.g. "socket", "setsockopt PACKET_RX_RING".
	Op string
	// Interface is the interface name.
	Interface string
	// Err is the cause.
	Err error
	// Detail, if set, adds information to the message (e.g. the MTU).
	Detail string
}

// Error returns a one-line message that says what to do where possible.
func (e *OpError) Error() string {
	switch {
	case errors.Is(e.Err, os.ErrPermission):
		return fmt.Sprintf("link: opening a raw socket on %s needs CAP_NET_RAW: run as root or grant it with `sudo setcap cap_net_raw,cap_net_admin+ep %s` (%s: %v)",
			e.Interface, binaryName(), e.Op, e.Err)
	case errors.Is(e.Err, ErrNoInterface):
		return fmt.Sprintf("link: no interface named %s (see `ip link`)", e.Interface)
	case errors.Is(e.Err, ErrInterfaceDown):
		return fmt.Sprintf("link: interface %s is down (`ip link set %s up`)", e.Interface, e.Interface)
	case errors.Is(e.Err, ErrNotEthernet):
		return fmt.Sprintf("link: %s is not an Ethernet interface (EtherGM needs a 6-byte MAC address)", e.Interface)
	case errors.Is(e.Err, ErrMTU):
		return fmt.Sprintf("link: interface %s has MTU %s; EtherGM needs an MTU of at least %d (`ip link set %s mtu 1500`)",
			e.Interface, e.Detail, MinMTU, e.Interface)
	}
	msg := "link: " + e.Interface + ": " + e.Op
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *OpError) Unwrap() error { return e.Err }

// binaryName is the path of the running program, for the setcap hint.
func binaryName() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "<binary>"
}
