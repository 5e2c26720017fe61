// Command gm_frames sends one EtherGM frame of every type, or listens and
// prints a one-line summary of every EtherGM frame it receives: a traffic
// generator and a poor man's tshark for EtherGM, used by the dissector tests
// and for looking at a link by hand.
//
// Usage:
//
//	gm_frames [--unit IFACE] --remote-mac MAC [--port N] [--remote-port N] [--node N] [--remote-node N] [--pcap FILE]
//	gm_frames [--unit IFACE] --listen [--count N] [--timeout D] [--json[=FILE]] [--pcap FILE]
//
// Sending, it opens the link on IFACE and sends the sample of package
// cmd/gm_frames/frameset to MAC: DATA, DATA_FIRST/MIDDLE/LAST (one
// segmented message), ACK (with a selective ack, and a go-back ACK), a NACK
// for every reason, PUT, GET and GOT with remote addresses, DATAGRAM, SCOUT
// (broadcast), SCOUT_REPLY, CONFIG with several entries and CONFIG_ACK, and
// prints one line per frame sent.
//
// Listening, it receives frames of every target port (until --count frames,
// --timeout, or SIGINT/SIGTERM) and prints, per frame, the source and
// destination MAC addresses and the summary that the Wireshark dissector
// wire/wireshark/ethergm.lua shows in its Info column.
//
// --port and --remote-port are the source and target GM ports written in
// the frames (0..15), --node and --remote-node the source and target node
// ids, --ethertype the EtherType (0x0600..0xFFFF; default 0x88B5). --unit
// defaults to $ETHERGM_UNIT, else the only interface that is up. With
// --json every line is a JSON object instead (JSON Lines), on standard
// output or in --json=FILE.
//
// With --pcap FILE (or ETHERGM_PCAP=FILE in the environment, %p standing for
// the process id) every frame sent or received is also recorded in a pcapng
// file for Wireshark.
//
// The options follow the convention of every EtherGM command (package
// internal/cli); the exit status is 0 on success, 1 on a failure, 2 for a
// bad command line (an unknown option, a port outside 0..15, an EtherType
// below 0x0600, an unexpected argument).
package main
