// Command egm-linkperf measures EtherGM's link layer (package
// github.com/ethergm/ethergm/gm/link) with the same experiments as the bare
// floor program egm-floor, so that the two can be compared frame for frame.
//
// # Ping-pong (-mode pingpong)
//
// The client sends a 64-byte Ethernet payload (a 44-byte EtherGM header of
// type DATAGRAM and 20 bytes of data: a 78-byte frame, built with
// wire.AppendFrame, CRC32C included) with link.Send; the server receives it
// through the link (which checks the CRC), builds a fresh reply with
// wire.AppendFrame (a new CRC) and sends it back; the client checks the
// reply's sequence number. With -wait=false both sides poll: Recv in a
// loop. With -wait=true both sides call link.Wait with Config.SpinTime < 0,
// so every receive sleeps in the kernel (poll on the ring socket) and is
// woken by the frame: the receiver is asleep when the frame arrives. The
// client prints a result.Latency record.
//
// # Streaming (-mode stream)
//
// The sender sends full-MTU frames (1500-byte Ethernet payload at MTU 1500:
// 44-byte header + 1456 bytes of data, a 1514-byte frame) with
// link.SendBatch (TX ring, Config.QdiscBypass on) in batches of -batch for
// -d, then end-marker frames (payload length 0, sequence number = number of
// data frames sent). The receiver counts data frames, bytes and sequence
// gaps between its first and last data frame and prints a result.Stream
// record with the received goodput: GbpsEth counts 1500 bytes of Ethernet
// payload per frame (the same quantity as a 1472-byte UDP datagram's IP
// packet), GbpsApp 1456 bytes. The sender is not flow-controlled: what the
// receiver misses shows up as gaps and kernel drops, and only received
// frames count.
//
// The frames carry the successive bytes of a message buffer of -msg bytes
// (1 MiB, as gm's streaming benchmark sends; from its start again when the
// next frame's share would pass its end), so that the link's copy reads
// the same cold bytes gm's does. Before, every frame copied one cached
// payload, which flattered the link against gm by the cost of that copy.
//
// Servers and receivers print "ready" on stderr once their link is open.
// -v2 opens the link with a TPACKET_V2 receive ring (link.Config.V2)
// instead of the open-block V3 ring.
//
// # Usage
//
//	egm-linkperf -i eth0 -mode pingpong -server [-wait]
//	egm-linkperf -i eth0 -mode pingpong -client -peer MAC [-wait] -n 50000 -warmup 5000
//	egm-linkperf -i eth0 -mode stream -server
//	egm-linkperf -i eth0 -mode stream -client -peer MAC -d 3s
package main
