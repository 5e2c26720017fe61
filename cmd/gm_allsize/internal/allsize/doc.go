// Package allsize is the engine of gm_allsize: the test plan (which
// lengths each size class gets), the client that runs the measurements,
// and the server that answers them, over GM ports.
//
// # Measurements
//
// A test point is a (size class, length, priority). For each, the client
// runs two measurements against the server:
//
//   - latency (ping-pong): warm-up round trips, then Iterations timed
//     round trips with one message in flight; the server echoes each
//     message with the same size, length and priority. The half round trip
//     is the timed total divided by 2*Iterations.
//   - bandwidth: Iterations messages with up to Depth in flight (every send
//     token the client has, bounded by WindowBytes); the server keeps up to
//     2*Depth+8 buffers provided (within 2*WindowBytes) and sends a done
//     message when it has received the last one. The time runs from the first send to the
//     arrival of done.
//
// With Options.Verify every request and every echo carries the pattern of
// package pattern for (size, length, sequence number, direction); the
// server checks the requests, the client the echoes, and the server
// returns its count and first mismatches in its done message.
//
// # Control protocol
//
// Control messages travel on the same ports as the data, with size class
// CtlSize (31) at low priority, which test points never use: each side
// keeps a few control buffers of that class provided. A control message is
// "EGAS" + JSON + CRC32C of both, so that a corrupted one is detected even
// on a link whose CRC check is off.
//
//	client                               server
//	hello{version, verify, points}  ->
//	                                <-   welcome{host}
//	begin{mode, size, len, prio,
//	      count, depth}             ->   provides receive buffers
//	                                <-   ready
//	data messages (and echoes)      <->
//	                                <-   done{received, errors, mismatches}
//	... one begin per measurement ...
//	bye                             ->
//	                                <-   byeack{counters}
//
// Either side may send abort{reason} instead of its next message; the
// other side then ends the session with ErrAborted. The server needs no
// options beyond its port: everything else comes in begin.
//
// # Concurrency
//
// A Client or Server drives its port from the calling goroutine only,
// polling with BlockingReceive (a millisecond of spinning, then sleep) and
// running send callbacks through Unknown; a watchdog alarm bounds each
// sleep so that timeouts and the Stop flag are noticed.
package allsize
