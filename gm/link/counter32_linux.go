//go:build linux && !(amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64 || s390x)

package link

import "sync/atomic"

// counter is a statistics counter with a single writer at a time and
// readers on any goroutine (Stats). A uint64 is not a machine word on this
// platform, so the writer stores atomically (counter64_linux.go explains
// the 64-bit form).
type counter struct{ v atomic.Uint64 }

func (c *counter) add(n uint64) { c.v.Store(c.v.Load() + n) }
func (c *counter) load() uint64 { return c.v.Load() }
