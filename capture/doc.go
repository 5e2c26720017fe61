// Package capture records EtherGM frames in pcapng files that Wireshark,
// tshark and tcpdump read, with the Lua dissector in wire/wireshark
// decoding every field.
//
// # Use
//
// A Writer is opened on a file and fed whole Ethernet frames through its Tap
// method, whose signature matches the link's Config.Tap hook, so turning
// capture on is one assignment:
//
//	w, err := capture.Open("run.pcapng")
//	if err != nil { ... }
//	defer w.Close()
//	l, err := link.Open("eth0", &link.Config{Tap: w.Tap})
//
// Commands register the --pcap flag with Flag and call Open on its value.
// Any program using the library can also turn capture on from the
// environment: FromEnv returns a Writer when ETHERGM_PCAP is set, for
// example ETHERGM_PCAP=/tmp/egm-%p.pcapng, where %p becomes the process id
// so that several processes write separate files. Within a process that
// Writer is shared, so every link the library opens records into one file.
//
// # File format
//
// The file is pcapng (one section, one interface of link type Ethernet,
// snaplen 65535, nanosecond timestamps), written with
// github.com/google/gopacket/pcapgo. Each frame becomes one Enhanced Packet
// Block stamped with the time Tap was called. Frames longer than the snaplen
// are cut to it, with their original length recorded. pcapgo cannot write
// the epb_flags option, so the direction (sent or received) of a frame is
// not recorded; the Ethernet source address tells it.
//
// # Concurrency
//
// A Writer is safe for concurrent use: the link calls Tap from its sender
// and its receiver goroutines at the same time. Records are buffered and
// written to the file by Flush and Close.
package capture
