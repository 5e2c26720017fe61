// Command allsize is the benchmark driver of gm_allsize over all message
// sizes, next to NetPIPE (TCP) and sockperf (UDP) on the same path, in one
// run.
//
// It builds two network namespaces joined by one veth pair (no bridge) for
// each MTU (1500 and 9000 by default), pins every client to CPU 0 and every
// server to CPU 1 with taskset, and runs three interleaved repetitions of:
//
//   - gm_allsize --serve on host1 and gm_allsize --remote-host=host1 on
//     host0, size classes 4..21 (8 bytes to 1 MiB), low priority;
//   - NPtcp (NetPIPE over TCP) from 1 byte to 1 MiB, powers of two and
//     the midpoints between them (no perturbations);
//   - sockperf ping-pong over UDP at 14 bytes (sockperf's smallest
//     message: the UDP figure for the 8-byte row), 64 bytes, 1 KiB and the
//     largest unfragmented datagram;
//   - sockperf throughput over UDP with the largest unfragmented datagram
//     (1472 bytes at MTU 1500, 8972 at MTU 9000), counted at the receiver.
//
// Every figure of the table is the median of the repetitions. Latency is
// the half round trip in microseconds, as a mean over the round trips of a
// run (gm_allsize's half-rtt, sockperf's avg-rtt/2, NetPIPE's time per
// half round trip), and as a median of the round trips (gm_allsize and
// sockperf only). The latency goal against UDP is judged on the medians
// (sockperf's mean is dominated by rare scheduler stalls), the one against
// TCP on the means.
// Bandwidth is MB/s (10^6 bytes per second) of message payload: streaming
// for gm_allsize (every send token in flight) and sockperf tp; NetPIPE's is
// a ping-pong figure (block size over half round trip), so the table also
// gives EtherGM's ping-pong bandwidth at 1 MiB.
//
// # Output
//
// Into <results>/allsize-<date>/ (-results, default $RESULTS or
// "results"): table.md (the table and the goals, PASS or MISS),
// results.json (every value of every repetition, the medians, the goals
// and the machine), allsize.svg (latency and bandwidth against length,
// every curve of both MTUs), one plot per MTU, the baseline CSVs for
// gm_allsize --baseline (udp-mtuN.csv, tcp-mtuN.csv), gm_allsize's own CSV
// and JSON per repetition, and bench.log (every command and its output).
// The table is printed on standard output. With -readme FILE, the section
// of FILE between the markers
//
//	<!-- allsize-results:begin --> and <!-- allsize-results:end -->
//
// is replaced by the machine description and the table, and the plot is
// copied next to FILE as allsize-latest.svg.
//
// Run it as root from the repository root:
//
//	go run ./bench/allsize -readme bench/allsize/README.md
package main
