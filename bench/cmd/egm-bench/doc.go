// Command egm-bench is the driver of `make bench`: it measures EtherGM's link
// layer and its GM ports next to kernel UDP and TCP on the same veth pair and
// prints medians and ratios.
//
// It builds a two-host network-namespace cluster joined by one veth pair
// (package internal/netns, Options{Hosts: 2, Direct: true}, MTU 1500) and, if
// the selected measurements need them, a second direct pair at MTU 9000
// and a pair joined through the in-process impairment relay
// (Options{Relay: ...}); it writes a GM node map for each. It pins every
// client or sender to CPU 0 and every server or receiver to CPU 1 with
// taskset, and runs -reps interleaved repetitions of the measurements below.
// The polled ring ping-pongs (floor, link polling, gm and gm with a key)
// take well under a second, and their medians move more from one run to
// the next than within a run, so each repetition runs them -pp-runs times
// (3 by default) and keeps each metric's median:
//
//  1. floor ping-pong: egm-floor, a bare busy-polled TPACKET_V3 ring
//     ping-pong with no protocol and no CRC (the physical floor);
//  2. link ping-pong, polling: egm-linkperf -wait=false;
//  3. link ping-pong, blocking: egm-linkperf -wait=true (both sides asleep
//     in the kernel between frames);
//  4. UDP ping-pong: sockperf sr / sockperf pp --full-rtt, 64-byte messages;
//  5. TCP ping-pong: NetPIPE NPtcp at 64 bytes (it prints half the round
//     trip, the best of its trials; we double it);
//  6. link streaming: egm-linkperf -mode stream (SendBatch, TX ring, qdisc
//     bypass) with the receiver counting what arrives;
//  7. UDP streaming: sockperf tp with 1472-byte datagrams; sockperf's client
//     reports what it sent, so a fresh sockperf server is run for each
//     repetition and its "messages received" count (printed on SIGINT) over
//     the client's run time is the received rate;
//  8. floor streaming: egm-floor -stream (TX ring + bypass, busy-polled
//     receiver);
//  9. gm ping-pong (after 3): egm-gmperf -mode pingpong, 8-byte messages at
//     high priority, both sides polling Port.Receive;
//  10. gm streaming (after 6): egm-gmperf -mode stream, 1 MiB messages,
//     every send token in flight, goodput counted at the receiver;
//  11. floor, link and gm streaming on the MTU 9000 pair (egm-floor
//     -stream -size 9000: 16 KiB TX ring slots);
//  12. gm streaming through the relay, without loss and with 5 % random
//     loss in both directions (Relay.SetImpairment before each run).
//
// Ping-pong metrics are round-trip times in microseconds (64-byte Ethernet
// payload, 78-byte frames; UDP and TCP carry 64-byte messages). Streaming
// metrics are received goodput in Gbit/s of Ethernet payload (1500 bytes per
// full frame or per 1472-byte UDP datagram), plus application payload (1456
// bytes per EtherGM frame, 1472 per UDP datagram). The driver prints a table
// of per-repetition values and medians, the ratios ours/UDP, ours/floor and
// ours/TCP with PASS or MISS for each goal, and writes the same as Markdown
// and JSON, with the raw outputs, to results/bench-<date>/.
//
// gm streaming goodput is counted as message payload and compared with the
// link's application payload and UDP's datagram payload (the bytes the
// application gets); the sender's retransmissions are reported in percent
// of its first transmissions.
//
// Goals (medians of the same run): link polling RTT <= 0.1 x UDP RTT and
// <= 1.1 x floor RTT; link blocking RTT <= 1.2 x UDP RTT; link streaming
// goodput >= 1.4 x UDP goodput; gm polling RTT <= 1.35 x floor RTT,
// <= 1.15 x link polling RTT and <= 0.1 x UDP RTT; gm streaming goodput
// >= 1.3 x UDP, >= 0.95 x link streaming goodput and >= 0.85 x floor
// streaming goodput, at MTU 1500 and at MTU 9000 (against the link and the
// floor); gm streaming at 5 % loss >= 0.5 x without loss (same relay); with
// a cluster key, gm polling RTT <= 1.1 x and gm streaming goodput >= 0.9 x
// without. A MISS does not fail the run (the machine is noisy); a
// measurement error does.
//
// egm-bench must run as root. It needs taskset, nice and ip; sockperf
// (Debian package sockperf) only for udp-pp and udp-stream, and NPtcp
// (netpipe-tcp) only for tcp-pp: before it starts it checks the tools of
// the measurements -only selected. It also needs either -bin with prebuilt
// egm-floor, egm-linkperf and egm-gmperf or a Go toolchain to build them
// (CGO_ENABLED=0) into the cluster's temporary directory. Namespaces and
// processes are removed at the end, on error and on SIGINT/SIGTERM.
package main
