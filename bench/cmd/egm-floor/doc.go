// Command egm-floor is the physical floor that the EtherGM benchmarks are
// compared with: a bare busy-polled AF_PACKET ring ping-pong (and, with
// -stream, a bare TX-ring stream) with no protocol and no CRC, written
// directly on golang.org/x/sys/unix. It deliberately does not use the
// EtherGM link package: it is the independent lower bound.
//
// # Technique
//
// Receive: one AF_PACKET SOCK_RAW socket bound to EtherType 0x88B5 with a
// TPACKET_V3 RX ring, read while its block is still open (the x86-64
// technique our link uses, see package gm/link): spin on the open block's
// num_pkts, then on each packet's tp_status USER bit; take the MAC offset
// (82) and the frame length from our own fixed frame size, never from
// tp_mac/tp_len (written after the USER bit); zero the used part of a block,
// then hand it back with block_status = TP_STATUS_KERNEL. A busy-polled
// TPACKET_V2 ring measured the same (~5 us RTT) in the project's AF_PACKET
// measurements; V3 open-block is used because it is what our link does, so
// the floor differs from the link only by what the link adds (EtherGM
// header and CRC32C, BPF port filter, wake-up machinery, counters).
//
// Transmit: plain send(2) on the bound socket for ping-pong; for -stream, a
// TPACKET_V3 TX ring (fixed 2 KiB slots), one sendto(MSG_DONTWAIT) kick per
// batch, PACKET_QDISC_BYPASS on, and PACKET_VNET_HDR as gm/link's TX ring
// has it (-vnet, default on): a frame of up to 16384 bytes is copied whole
// into the socket buffer instead of being attached as fragments of the
// ring's pages, which a veth device copies again into a page it allocates.
// The floor uses the kernel path the link uses, so that it stays a bound
// for it.
//
// Frames are Ethernet II, EtherType 0x88B5, with a payload that starts with
// the magic "EGMF", a kind byte and a 64-bit sequence number; the rest is
// zero. The ping-pong payload is 64 bytes (78-byte frames). The client checks
// the sequence number of every reply.
//
// # Usage
//
//	egm-floor -i eth0 -server                           # echo server, runs until killed
//	egm-floor -i eth0 -client -peer MAC -n 20000 -warmup 2000
//	egm-floor -i eth0 -stream -server                   # stream receiver, exits on the end marker
//	egm-floor -i eth0 -stream -client -peer MAC -d 3s   # stream sender
//
// The client (ping-pong) and the stream receiver print one JSON line
// (package bench/internal/result: {p50_us, p99_us, mean_us, n, ...} or the
// stream record). Servers print "ready" on stderr once their socket is bound.
// The program is Linux-only and x86-64-only by design of the open-block read.
package main
