// Package result holds the JSON result records that the benchmark programs
// (egm-floor, egm-linkperf, egm-gmperf) print on stdout and that the driver (egm-bench)
// parses, plus the small statistics helpers that both drivers (egm-bench,
// allsize) use.
//
// # Definitions
//
// A ping-pong record ([Latency]) summarises the measured round trips of one
// run: the client sends a 64-byte payload, the server echoes it, the client
// checks the reply's sequence number and times the whole round trip with the
// monotonic clock. Warm-up round trips are not recorded.
//
// A streaming record ([Stream]) is written by the receiver. It counts only
// frames that arrived, between the arrival of the first and of the last data
// frame. Two goodputs are given, both in Gbit/s (10^9 bit/s):
//
//   - GbpsEth counts the Ethernet payload of each received frame (the frame
//     length minus the 14-byte Ethernet header: 1500 bytes for a full frame
//     at MTU 1500). For UDP the same quantity is the IP packet length
//     (1472-byte datagram + 8 UDP + 20 IP = 1500 bytes), so GbpsEth compares
//     like with like across our link, the floor and kernel UDP.
//   - GbpsApp counts only what the application asked to carry: the payload
//     after our own headers (1500 - 44 = 1456 bytes for an EtherGM frame,
//     1500 for the header-less floor, 1472 for a UDP datagram).
//
// egm-gmperf (GM ports) prints the same records with messages in place of
// frames: Frames counts messages, AppPayload is the message length, and
// EthPayload the Ethernet payload that carries one message (one 44-byte
// EtherGM header per segment). Its sender also fills DataFrames and Resends.
package result
