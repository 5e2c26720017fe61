//go:build !linux

package link

// RingMemory returns 0, 0: there are no rings on this system.
func RingMemory(cfg *Config, mtu int) (rx, tx int) { return 0, 0 }
