package link

import "github.com/ethergm/ethergm/wire"

// RingMemory returns the sizes in bytes of the receive and transmit rings
// that Open maps for an interface of the given MTU with cfg (nil: the
// defaults), laid out as Open lays them out:
//
//	rx = B × max(RxBlocks, 2), B = RxBlockSize rounded up to a page and to
//	     one frame of MTU+14 bytes plus 138 bytes of headers (with V2 also
//	     to a multiple of its slot, the next power of two >= MTU+80)
//	tx = T × ceil(TxFrames / (T/S)), S = the next power of two >= MTU+72
//	     (at least 1024; txFrameSize), T = max(64 KiB, S)
//
// With the defaults that is 8 MiB + 512 KiB at MTU 1500 and 8 MiB + 4 MiB
// at MTU 9000. The kernel allocates both rings when the Link opens (they
// are pinned kernel memory, mapped into the process) and frees them when
// it closes; a Link holds no other memory of that order (its receive
// buffer for the doorbell socket is the kernel's minimum).
func RingMemory(cfg *Config, mtu int) (rx, tx int) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	bs, nb := rxLayout(&c, mtu)
	if c.V2 {
		fs := 2048
		for fs < rxMacOffV2+wire.EthHeaderLen+mtu {
			fs *= 2
		}
		bs = (bs + fs - 1) / fs * fs
	}
	rx = bs * nb

	fs := txFrameSize(vnetHdrLen, mtu)
	tb := max(txBlockSize, fs)
	frames := c.TxFrames
	if frames <= 0 {
		frames = DefaultTxFrames
	}
	per := tb / fs
	tx = tb * ((frames + per - 1) / per)
	return rx, tx
}

// txFrameSize returns the transmit ring's slot size for an interface of
// the given MTU: the next power of two, at least 1024, that holds the
// slot's header (txDataOff), a virtio_net_hdr of vnet bytes (0 or
// vnetHdrLen) and a whole frame.
func txFrameSize(vnet, mtu int) int {
	fs := 1024
	for fs < txDataOff+vnet+wire.EthHeaderLen+mtu {
		fs *= 2
	}
	return fs
}
