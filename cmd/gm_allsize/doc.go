// Command gm_allsize verifies and benchmarks EtherGM's data path for every
// message size, like Myricom GM's tool of the same name.
//
// # Modes
//
//	gm_allsize --verify                  loopback through the local unit: two
//	                                     ports of this host talk to each other
//	gm_allsize --serve                   on host B: answer two-host runs
//	gm_allsize --remote-host=B           on host A: run against B's server
//
// Without --serve or --remote-host the run is a loopback run (with or
// without --verify). The server needs only --unit and --port (and --once
// to exit after one session): the client sends it the run's parameters.
// --remote-host takes a host name of the node map or a node id.
//
// For each size class from --min-size to --max-size (default 3..24) the
// lengths are 0, 1, the powers of two whose smallest class it is, the class
// maximum 2^size-8, and --random random lengths of the class (or exactly
// the --lengths given), each at every --priority (low, high or both). Each
// (size, length, priority) gets a latency measurement (ping-pong, one
// message in flight) and a bandwidth measurement (every send token in
// flight).
//
// # Verification
//
// With --verify every payload carries a pattern derived from (size,
// length, sequence number); the server checks each request and the client
// each echo, byte for byte. A mismatch prints
//
//	size 10 len 1016 seq 3: offset 897 expected 0x79 got 0x78
//
// (the first three bytes of a message, then a count; lines from the server
// side are prefixed "server: "). --no-crc-check makes the ports deliver
// frames whose CRC32C is wrong, to test --verify itself.
//
// # Output
//
// One line per (size, length, priority):
//
//	size 10 len     1016 prio low  iters  1000 half-rtt    12.30 us bw    512.40 MB/s
//
// half-rtt is half the round trip in microseconds; bw is MB/s with MB =
// 10^6 bytes. Then a summary: points, messages, bytes, data errors, failed
// sends, and the counter deltas of the ports (resends, nacks, drops, CRC
// errors; for a two-host run the server's too). --json and --csv write the
// same results for scripts (formats: package report) to standard output,
// which moves the text to standard error; --json=FILE and --csv=FILE write
// them to files. A progress line is shown on standard error when it is a
// terminal. -v (--verbose) adds the loopback server's log, prefixed
// "server: ", on standard error.
//
// The exit status is 0 when every message was intact and every send
// succeeded, 1 on a data error, a failed send, a port that could not be
// opened or a run that stopped early, and 2 for a bad command line (an
// unknown option, a bad value, an unexpected argument). Errors are one
// line that names the GM status and says what to do:
//
//	gm_allsize: GM_PERMISSION_DENIED: ...; ports 0, 1 and 3 are reserved for GM's daemons; use --port 2 or 4..15
//
// The options follow the convention of every EtherGM command (package
// internal/cli): --help, --version, --unit, --port, --remote-host,
// --remote-port, --hostname, --map-file, --state-dir, --json, --pcap,
// --verbose.
//
// # Plots
//
// --plot FILE.svg draws latency and bandwidth against message length on
// log-log axes, one curve per priority, plus the dashed curves of every
// --baseline FILE.csv (columns series,length,half_rtt_us,bw_mbs; the
// bench/allsize driver writes them for UDP and TCP). --plot FILE.png
// converts the SVG with rsvg-convert if it is installed.
//
// # Host, map and state
//
// --hostname NAME names this host in the node map --map-file FILE;
// --state-dir DIR holds the per-host state (units file, default map). Each
// defaults to its environment variable (ETHERGM_HOST, ETHERGM_MAP,
// ETHERGM_STATE_DIR), then to the kernel's host name, DIR/map and
// /run/ethergm. --pcap FILE (or ETHERGM_PCAP) records the frames of the
// port in pcapng (package capture); in a loopback run that is the client's
// port, which sees both directions.
package main
