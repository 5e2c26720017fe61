package link

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethergm/ethergm/wire"
)

// selfTest checks, on this kernel, everything the open-block
// reader relies on beyond the documented TPACKET_V3 ABI. It returns "" if
// the open-block reader may be used, else the reason for the fallback.
//
// A temporary socket bound to the EtherType on the loopback interface,
// with a one-second retire timeout (so its first block stays open during
// the test) and a filter for DATAGRAM frames from our MAC to target port
// wire.PortNone, watches the frames a second temporary socket sends to our
// own MAC through lo with sendto(2) (the path by which a Link's frames
// reach the other Links of the host). The frames never leave the host.
// Each frame must appear in the
// still-open block (block_status not TP_STATUS_USER, num_pkts counted up),
// readable by the same reader code, byte-identical at offset rxMacOff, with
// the kernel's tp_mac and tp_snaplen agreeing, and with a valid CRC.
//
// What it proves belongs to the kernel, not to the interface or the Link's
// ring (the test has a ring of its own, on lo): a test that passed is not
// run again in this process for the same network namespace, EtherType and
// largest test frame (selfTestCache): it is a large part of an Open
// (BenchmarkOpen), most of it the kernel's RCU grace periods
// (synchronize_net) when its ring is set up and its sockets closed. A failed
// test is run again at the next Open: its cause (lo down, a loaded
// machine) may pass.
func (l *Link) selfTest() string {
	if selfTestFault != "" {
		return selfTestFault
	}
	key, keyed := l.selfTestKey()
	if keyed {
		if _, ok := selfTestCache.Load(key); ok {
			return ""
		}
	}
	selfTestRuns.Add(1)
	why, retry := l.selfTestOnce()
	if retry {
		// The periodic retire timer hit the test block; once more.
		why, retry = l.selfTestOnce()
		if retry {
			why = "self-test: the kernel retired the test block early twice"
		}
	}
	if why == "" && keyed {
		selfTestCache.Store(key, struct{}{})
	}
	return why
}

// selfTestFault, if set (by tests), is returned as the self-test failure.
var selfTestFault string

// selfTestCache holds the selfTestKeys of the self-tests that passed in
// this process.
var selfTestCache sync.Map

// selfTestRuns counts the self-tests run (not served from selfTestCache;
// a test retried after an early block retirement counts once), for tests.
var selfTestRuns atomic.Int64

// selfTestKey is what a self-test depends on beyond the kernel: the
// network namespace (its lo carries the test frames), the EtherType (the
// filter) and the largest test frame.
type selfTestKey struct {
	netns      uint64 // the namespace's cookie (SO_NETNS_COOKIE), never reused
	etherType  uint16
	maxPayload int
}

// selfTestKey returns l's selfTestKey; false if the test must run: the
// calling thread's network namespace cannot be identified (a kernel before
// 5.14), or its lo is missing or down (the test then says why it cannot
// run).
func (l *Link) selfTestKey() (selfTestKey, bool) {
	if l.loIndex == 0 {
		return selfTestKey{}, false
	}
	if lo, err := net.InterfaceByIndex(l.loIndex); err != nil || lo.Flags&net.FlagUp == 0 {
		return selfTestKey{}, false
	}
	// The inode of /proc/thread-self/ns/net would not do: a new
	// namespace may reuse a deleted one's.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return selfTestKey{}, false
	}
	cookie, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	unix.Close(fd)
	if err != nil {
		return selfTestKey{}, false
	}
	return selfTestKey{netns: cookie, etherType: l.cfg.EtherType, maxPayload: l.selfTestPayload()}, true
}

// selfTestPayload is the payload length of the largest self-test frame.
func (l *Link) selfTestPayload() int { return min(l.mtu, 1500) - wire.HeaderLen }

func (l *Link) selfTestOnce() (why string, retry bool) {
	if l.loIndex == 0 {
		return "self-test impossible: the network namespace has no loopback interface", false
	}
	fd, err := l.packetSocket("socket (self-test)", false)
	if err != nil {
		return fmt.Sprintf("self-test: %v", err), false
	}
	defer unix.Close(fd)
	spec := filterSpec{etherType: l.cfg.EtherType, port: int(wire.PortNone), mac: l.mac, loIndex: l.loIndex, selfTest: true, snap: acceptAll}
	if err := l.attachFilter(fd, spec); err != nil {
		return fmt.Sprintf("self-test: %v", err), false
	}
	page := os.Getpagesize()
	bs := (64<<10 + page - 1) / page * page
	mem, err := l.setupRxRing(fd, bs, 2, 1000)
	if err != nil {
		return fmt.Sprintf("self-test: %v", err), false
	}
	defer unix.Munmap(mem)
	if err := l.bindIf(fd, htons(l.cfg.EtherType), l.loIndex, "bind (self-test)"); err != nil {
		return fmt.Sprintf("self-test: %v", err), false
	}
	r := rxRing{mem: mem, blockSize: bs, nBlocks: 2, openBlock: true, macOff: rxMacOff, etherType: l.cfg.EtherType}
	tx, err := l.packetSocket("socket (self-test sender)", false)
	if err != nil {
		return fmt.Sprintf("self-test: %v", err), false
	}
	defer unix.Close(tx)
	if err := l.bind(tx, 0, "bind (self-test sender)"); err != nil {
		return fmt.Sprintf("self-test: %v", err), false
	}

	nonce := rand.Uint32()
	maxPayload := l.selfTestPayload()
	sizes := []int{0, 1, 7, 63, 64, 200, 999, maxPayload}
	payload := make([]byte, maxPayload)
	for i := range payload {
		payload[i] = byte(i*7) ^ byte(nonce)
	}
	buf := make([]byte, 0, wire.EthHeaderLen+wire.MaxHeaderLen+maxPayload)
	ours := uint32(0) // frames of this test seen in the block
	for i, size := range sizes {
		f := wire.HeaderFields{Type: wire.TypeDatagram, TargetPort: wire.PortNone, SourcePort: wire.PortNone,
			Session: nonce, Seq: uint32(i), MsgLen: uint32(size)}
		frame := wire.AppendFrame(buf[:0], l.mac, l.mac, l.cfg.EtherType, &f, payload[:size])
		if err := sendto(tx, frame, &l.saLo); err != nil {
			if err == unix.ENETDOWN {
				return "self-test impossible: the loopback interface lo is down", false
			}
			return fmt.Sprintf("self-test: send: %v", err), false
		}
		start := time.Now()
		var got []byte
		for got == nil {
			if g := r.next(); g != nil {
				if h := wire.Header(g[wire.EthHeaderLen:]); h.Session() != nonce {
					continue // another Link's self-test on this interface
				}
				got = g
				break
			}
			if el := time.Since(start); el > selfTestTimeout {
				return fmt.Sprintf("self-test: frame %d not readable from the open block within %v", i, selfTestTimeout), false
			} else if el > time.Millisecond {
				runtime.Gosched() // a late frame: leave the CPU to others while waiting
			}
		}
		ours++
		if r.load(bdBlockStatus)&statusUser != 0 || r.blk != 0 {
			return "", true
		}
		if np := r.load(bdNumPkts); np < ours {
			return fmt.Sprintf("self-test: num_pkts %d after %d frames", np, ours), false
		}
		if !bytes.Equal(got, frame) {
			return fmt.Sprintf("self-test: frame %d (%d bytes) read back as %d different bytes", i, len(frame), len(got)), false
		}
		// The send has returned, so the kernel has finished this packet:
		// its tp_mac and tp_snaplen must agree with what was assumed.
		p := int(uintptr(unsafe.Pointer(&got[0]))-uintptr(unsafe.Pointer(&mem[0]))) - rxMacOff
		if p < bdSize || p+p3Size > bs {
			return fmt.Sprintf("self-test: frame %d at impossible ring offset %d", i, p), false
		}
		if m := *(*uint16)(unsafe.Pointer(&mem[p+p3Mac])); m != rxMacOff {
			return fmt.Sprintf("self-test: kernel tp_mac is %d, expected %d", m, rxMacOff), false
		}
		if s := r.load(p + p3Snaplen); s != uint32(len(frame)) {
			return fmt.Sprintf("self-test: kernel tp_snaplen is %d for a %d-byte frame", s, len(frame)), false
		}
	}
	if n := r.crcErrors.load() + r.malformed.load(); n != 0 {
		return fmt.Sprintf("self-test: %d frames failed validation", n), false
	}
	return "", false
}
