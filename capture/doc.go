// Package capture records EtherGM frames in pcapng files that Wireshark,
// tshark and tcpdump read, with the Lua dissector in wire/wireshark
// decoding every field.
//
// # Use
//
// A Writer is opened on a file, and its Wrap decorates a link.Endpoint so
// that the Writer records every frame the endpoint sends and receives (as
// gVisor's sniffer wraps a link endpoint; the link knows nothing of it):
//
//	w, err := capture.Open("run.pcapng")
//	if err != nil { ... }
//	defer w.Close() // after the endpoint
//	l, err := link.Open("eth0", nil)
//	if err != nil { ... }
//	ep := w.Wrap(l) // use ep, not l
//
// A GM port wraps the links it opens with gm.Config.WrapLink:
//
//	cfg.WrapLink = w.Wrap
//
// The decorator keeps the wrapped endpoint's capabilities (the fast paths
// of a polling port stay); what it costs is one copy of each frame into
// the Writer's buffer, under its mutex (see Writer.Wrap).
//
// Commands register the --pcap flag with Flag and call Open on its value.
// Any program using the library can also turn capture on from the
// environment: FromEnv returns a Writer when ETHERGM_PCAP is set, for
// example ETHERGM_PCAP=/tmp/egm-%p.pcapng, where %p becomes the process id
// so that several processes write separate files. Within a process that
// Writer is shared, so every link wrapped with it records into one file.
//
// # File format
//
// The file is pcapng (one section, one interface of link type Ethernet,
// snaplen 65535, nanosecond timestamps), written with
// github.com/google/gopacket/pcapgo. Each frame becomes one Enhanced Packet
// Block stamped with the time it crossed the endpoint (Tap was called).
// Frames longer than the snaplen are cut to it, with their original length recorded. pcapgo cannot write
// the epb_flags option, so the direction (sent or received) of a frame is
// not recorded; the Ethernet source address tells it.
//
// # Concurrency
//
// A Writer is safe for concurrent use: the endpoints of Wrap record from
// their sender and receiver goroutines at the same time, and every link of
// a process may share one Writer. Records are buffered and
// written to the file by Flush and Close.
package capture
