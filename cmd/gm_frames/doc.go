// Command gm_frames sends one EtherGM frame of every type, or listens and
// prints a one-line summary of every EtherGM frame it receives: a traffic
// generator and a poor man's tshark for EtherGM, used by the dissector tests
// and for looking at a link by hand.
//
// Usage:
//
//	gm_frames -i IFACE --to MAC [--port N] [--from-port N] [--node N] [--to-node N] [--pcap FILE]
//	gm_frames -i IFACE --listen [--count N] [--timeout D] [--pcap FILE]
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
// With --pcap FILE (or ETHERGM_PCAP=FILE in the environment, %p standing for
// the process id) every frame sent or received is also recorded in a pcapng
// file for Wireshark.
package main
