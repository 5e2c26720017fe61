//go:build !linux

package link

import (
	"net"
	"runtime"
	"time"
)

// Link is an EtherGM endpoint on one Ethernet interface. It is only
// implemented on Linux; elsewhere Open fails with ErrNotSupported.
type Link struct{}

// Open fails with an *OpError wrapping ErrNotSupported: AF_PACKET exists
// only on Linux.
func Open(ifname string, cfg *Config) (*Link, error) {
	return nil, &OpError{Op: "open", Interface: ifname, Err: ErrNotSupported,
		Detail: "not implemented on " + runtime.GOOS + ", EtherGM needs Linux AF_PACKET"}
}

// Recv returns 0.
func (l *Link) Recv(frames [][]byte) int { return 0 }

// RecvIdle returns false.
func (l *Link) RecvIdle() bool { return false }

// RecvOwned returns 0.
func (l *Link) RecvOwned(frames [][]byte) int { return 0 }

// SendOwned returns ErrNotSupported.
func (l *Link) SendOwned(frame []byte) error { return ErrNotSupported }

// Wait returns ErrNotSupported.
func (l *Link) Wait(frames [][]byte, timeout time.Duration) (int, error) {
	return 0, ErrNotSupported
}

// Wake does nothing.
func (l *Link) Wake() {}

// Send returns ErrNotSupported.
func (l *Link) Send(frame []byte) error { return ErrNotSupported }

// SendBatch returns ErrNotSupported.
func (l *Link) SendBatch(frames [][]byte) (int, error) { return 0, ErrNotSupported }

// TxSlot returns nil.
func (l *Link) TxSlot() []byte { return nil }

// TxSlotSize returns 0.
func (l *Link) TxSlotSize() int { return 0 }

// TxCommit returns ErrNotSupported.
func (l *Link) TxCommit(n int) error { return ErrNotSupported }

// TxCommitNext returns ErrNotSupported.
func (l *Link) TxCommitNext(n int) ([]byte, error) { return nil, ErrNotSupported }

// Flush returns ErrNotSupported.
func (l *Link) Flush() error { return ErrNotSupported }

// HardwareAddr returns nil.
func (l *Link) HardwareAddr() net.HardwareAddr { return nil }

// MTU returns 0.
func (l *Link) MTU() int { return 0 }

// Name returns "".
func (l *Link) Name() string { return "" }

// Stats returns zero counters.
func (l *Link) Stats() Stats { return Stats{} }

// Mode returns "unsupported".
func (l *Link) Mode() string { return "unsupported" }

// Close returns nil.
func (l *Link) Close() error { return nil }

// Caps returns 0.
func (l *Link) Caps() Caps { return 0 }

// Unwrap returns nil.
func (l *Link) Unwrap() Endpoint { return nil }

// JoinWait returns nil.
func (l *Link) JoinWait(eps []Endpoint) Waiter { return nil }

// SetPorts returns ErrNotSupported.
func (l *Link) SetPorts(ports PortMask) error { return ErrNotSupported }

// Geometry returns the zero Geometry: there are no rings on this system.
func (l *Link) Geometry() Geometry { return Geometry{} }

// RingFrames returns 0: there is no receive ring on this system.
func RingFrames(cfg *Config, mtu int) int { return 0 }
