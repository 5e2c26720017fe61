// Command egm-gmperf measures EtherGM through GM ports (package
// github.com/ethergm/ethergm/gm): the same experiments as egm-linkperf, one
// layer up, with the reliable, segmenting protocol in the path. It prints the
// same JSON records (package bench/internal/result) for the driver
// egm-bench.
//
// Both sides open GM port -port (default 2) of unit -i with the default
// gm.Config (only -window changes it) and send with SendToPeerWithCallback.
// The host name, node map and state directory come from ETHERGM_HOST,
// ETHERGM_MAP and ETHERGM_STATE_DIR (see package gm); -peer names the
// server by its host name in the node map or by its node id.
//
// # Ping-pong (-mode pingpong)
//
// The client sends an 8-byte message (-size) at high priority (-prio) that
// carries a sequence number; the server copies it, provides its receive
// buffer again and sends it back from its own send buffer; the client checks
// the reply's length, sender and sequence number. Both sides poll: a loop on
// Port.Receive, never BlockingReceive; send completions and other events go
// to Port.Unknown. Each side keeps 4 receive buffers provided. The round
// trip is timed from just before SendToPeerWithCallback to the reply's
// receive event, after -warmup unmeasured round trips; the client prints a
// result.Latency record (p50, p99, mean RTT in microseconds). GM is
// reliable: there are no retries; a reply missing for -timeout is an error.
//
// # Streaming (-mode stream)
//
// The sender sends 1 MiB messages (-size) at low priority for -d with every
// send token in flight: one send buffer per token (61 by default), each
// reused as soon as its send callback ran; the first 8 bytes of each message
// are its sequence number. It polls with Port.Receive (spinning) while no
// token is free. Then it sends an 8-byte end marker carrying the number of
// messages sent (its own size class, same priority, so it arrives after the
// data), waits for every completion and prints its own result.Stream record:
// Frames = messages, Seconds = first send to last completion, DataFrames and
// Resends = the port's first transmissions and retransmissions of data
// frames (Port.Stats DataSent, DataRetransmitted).
//
// The receiver keeps -buffers (64) buffers provided and provides each again
// on receipt; it waits with Port.BlockingReceive (which spins 1 ms, then
// sleeps, and keeps spinning while frames stream in), woken every 100 ms by
// an alarm to check for SIGTERM and the timeout. It checks every message's
// length and sequence number, and at the end marker that it received
// every message sent, then prints a result.Stream record whose goodput is
// counted at the receiver: Frames = the messages after the first,
// Seconds = from the first message's receive event to the last one's.
// GbpsApp counts message payload (1048576 bytes per message); GbpsEth
// counts the Ethernet payload that carried it, assuming the protocol's
// segmentation (docs/PROTOCOL.md): one 44-byte EtherGM header per
// MTU-44 bytes of message (1080300 bytes per 1 MiB message at MTU 1500).
// Acknowledgements (the other way) and retransmissions are not counted.
//
// # Incast (-mode incast) and a TCP flow beside it (-mode tcp)
//
// Each sender (-client) keeps -depth (4) messages of 1 MiB in flight to
// -peer and sleeps in Port.BlockingReceiveNoSpin between events (many
// senders share a few cores), until SIGINT/SIGTERM (or -d), then waits for
// every completion and prints a result.IncastSend record: first
// transmissions, resends by cause, window cuts by signal, and its
// congestion window and round trips toward the sink. The sink (-server)
// takes messages from any sender, provides each buffer again at once, and
// prints a result.IncastSink record: each sender's messages and goodput
// over -d, after -warm counted from when all -senders sent, and Jain's
// fairness of them. -mode tcp is a Go TCP flow: the client writes to -peer
// (host:port), the server listens on -tcp and prints a result.TCPSink
// record over the same kind of interval. egm-bench's gm-incast*
// measurements run them (bench/README.md).
//
// Servers and receivers print "ready" on stderr once their port is open
// and their buffers provided.
//
// -cpuprofile FILE writes a CPU profile of the run (go tool pprof), to
// see where the sender's and the receiver's time goes separately: run
// each side with its own file.
//
// -v2 opens the port's link with a TPACKET_V2 receive ring
// (gm.Config.Link.V2) instead of the open-block V3 ring, the choice
// docs/GM-API.md ("Tuning") offers a streaming application.
//
// # Usage
//
//	ETHERGM_HOST=host1 ETHERGM_MAP=map egm-gmperf -i eth0 -mode pingpong -server
//	ETHERGM_HOST=host0 ETHERGM_MAP=map egm-gmperf -i eth0 -mode pingpong -client -peer host1 -n 50000 -warmup 5000
//	ETHERGM_HOST=host1 ETHERGM_MAP=map egm-gmperf -i eth0 -mode stream -server
//	ETHERGM_HOST=host0 ETHERGM_MAP=map egm-gmperf -i eth0 -mode stream -client -peer host1 -d 3s
package main
