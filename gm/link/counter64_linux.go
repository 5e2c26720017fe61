//go:build linux && (amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64 || s390x)

package link

import "sync/atomic"

// counter is a statistics counter with a single writer at a time (the
// goroutine that holds the receive or the send mutex) and readers on any
// goroutine (Stats). On a 64-bit platform the writer uses a plain store:
// a uint64 is a machine word there, and the Go memory model guarantees
// that a read racing with a write of a machine word observes either the
// old or the new value, never a mix. An atomic store (XCHG on amd64, a
// full barrier) would cost a locked instruction per counter on the data
// path, several per round trip on each side. Readers load atomically.
type counter struct{ v uint64 }

// add adds n. Only the holder of the mutex that guards the counter's
// writers may call it.
//
//go:norace
func (c *counter) add(n uint64) { c.v += n }

func (c *counter) load() uint64 { return atomic.LoadUint64(&c.v) }
