// Package report holds gm_allsize's results and their file formats: the
// text line per test point, JSON, CSV, and the baseline CSV that puts other
// transports (UDP, TCP) on the same plot.
//
// # Units
//
// Message lengths are bytes. Latency is the half round trip in
// microseconds: the time of a ping-pong round trip (one message in
// flight, echoed by the server) divided by two, as a mean over the timed
// round trips (half_rtt_us, the figure gm_allsize prints) and as a median
// (half_rtt_p50_us). Bandwidth is in MB/s with
// MB = 10^6 bytes: message bytes delivered per second while the sender
// keeps as many messages in flight as it has send tokens.
//
// # CSV
//
// The CSV written by WriteCSV has a header line and one row per test point;
// its first four columns are the baseline format:
//
//	series,length,half_rtt_us,bw_mbs,size,priority,iterations,errors,failed_sends,half_rtt_p50_us
//	EtherGM low,1016,12.3,512.4,10,low,1000,0,0,12.1
//
// A baseline CSV (ReadSeries) needs only the columns series and length and
// at least one of half_rtt_us and bw_mbs; other columns are ignored, and an
// empty cell means "not measured". Any CSV written by WriteCSV is therefore
// a valid baseline too, and so is what the bench/allsize driver writes for
// NetPIPE (TCP) and sockperf (UDP).
//
// # JSON
//
// WriteJSON writes one Run object: the run's parameters (Meta), one object
// per test point (Points) and the Summary, with the field names of the
// json tags below.
package report
