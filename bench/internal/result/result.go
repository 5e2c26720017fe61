package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"
)

// ErrNoRecord is returned by [Decode] when the input holds no JSON record.
var ErrNoRecord = errors.New("result: no JSON record in output")

// Latency is the round-trip summary of one ping-pong run.
type Latency struct {
	Tool    string  `json:"tool"`              // program and mode, e.g. "egm-floor"
	Mode    string  `json:"mode"`              // "pingpong", "pingpong-poll", "pingpong-wait"
	P50us   float64 `json:"p50_us"`            // median round trip, microseconds
	P99us   float64 `json:"p99_us"`            // 99th percentile round trip, microseconds
	MeanUs  float64 `json:"mean_us"`           // mean round trip, microseconds
	P999us  float64 `json:"p999_us"`           // 99.9th percentile round trip, microseconds
	MinUs   float64 `json:"min_us"`            // fastest round trip, microseconds
	MaxUs   float64 `json:"max_us"`            // slowest round trip, microseconds
	N       int     `json:"n"`                 // measured round trips
	Retries int     `json:"retries"`           // requests sent again after a reply timeout (not measured)
	Payload int     `json:"payload_bytes"`     // Ethernet payload per frame
	Note    string  `json:"note,omitempty"`    // free text: technique, ring mode
	Extra   string  `json:"extra,omitempty"`   // free text: e.g. link statistics
	Warmup  int     `json:"warmup,omitempty"`  // round trips before measuring
	Elapsed float64 `json:"seconds,omitempty"` // wall time of the measured phase
}

// Stream is the receiver's summary of one one-way streaming run. See the
// package documentation for the goodput definitions.
type Stream struct {
	Tool        string  `json:"tool"`
	Mode        string  `json:"mode"`                   // "stream-recv" or "stream-send"
	Frames      uint64  `json:"frames"`                 // data frames counted (egm-gmperf: messages)
	FrameLen    int     `json:"frame_bytes"`            // Ethernet frame length, header included
	EthPayload  int     `json:"eth_payload_bytes"`      // Ethernet payload per frame (FrameLen-14)
	AppPayload  int     `json:"app_payload_bytes"`      // application payload per frame
	Seconds     float64 `json:"seconds"`                // first to last counted frame
	GbpsEth     float64 `json:"gbps_eth"`               // Ethernet-payload goodput
	GbpsApp     float64 `json:"gbps_app"`               // application-payload goodput
	Mpps        float64 `json:"mpps"`                   // frames per second / 10^6
	Gaps        uint64  `json:"gaps"`                   // sequence numbers never seen (receiver)
	OutOfOrder  uint64  `json:"out_of_order"`           // frames whose sequence number went backwards
	KernelDrops uint64  `json:"kernel_drops,omitempty"` // PACKET_STATISTICS drops, when known
	Sent        uint64  `json:"sent,omitempty"`         // frames the sender reported, when known
	DataFrames  uint64  `json:"data_frames,omitempty"`  // reliable sender (egm-gmperf): data frames sent the first time
	Resends     uint64  `json:"resends,omitempty"`      // reliable sender (egm-gmperf): data frames sent again
	Note        string  `json:"note,omitempty"`
	Extra       string  `json:"extra,omitempty"`
}

// Summarize computes a [Latency] from round-trip samples. The percentile is
// the nearest-rank one on the sorted samples. samples is sorted in place.
func Summarize(samples []time.Duration) Latency {
	var l Latency
	l.N = len(samples)
	if l.N == 0 {
		return l
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	l.P50us = us(Percentile(samples, 50))
	l.P99us = us(Percentile(samples, 99))
	l.P999us = us(Percentile(samples, 99.9))
	l.MinUs = us(samples[0])
	l.MaxUs = us(samples[len(samples)-1])
	l.MeanUs = us(sum) / float64(l.N)
	return l
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted, or 0 for an empty slice.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Goodput fills the rate fields of s from Frames, EthPayload, AppPayload and
// Seconds.
func (s *Stream) Goodput() {
	if s.Seconds <= 0 {
		return
	}
	f := float64(s.Frames)
	s.GbpsEth = f * float64(s.EthPayload) * 8 / s.Seconds / 1e9
	s.GbpsApp = f * float64(s.AppPayload) * 8 / s.Seconds / 1e9
	s.Mpps = f / s.Seconds / 1e6
}

// Median returns the median of the finite values of v (the mean of the two
// middle values for an even count), or NaN if there is none: a NaN stands
// for a repetition that failed. v is not modified.
func Median(v []float64) float64 {
	s := slices.DeleteFunc(slices.Clone(v), func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) })
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Print writes v as one line of JSON to w.
func Print(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// Decode finds the last line of out that starts with '{' and unmarshals it
// into v. Programs may print progress lines before their record.
func Decode(out string, v any) error {
	end := len(out)
	for end > 0 {
		start := end - 1
		for start > 0 && out[start-1] != '\n' {
			start--
		}
		line := out[start:end]
		for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
			line = line[:len(line)-1]
		}
		if len(line) > 0 && line[0] == '{' {
			return json.Unmarshal([]byte(line), v)
		}
		end = start
	}
	return ErrNoRecord
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// WriteJSON writes v, indented, to the file path.
func WriteJSON(path string, v any) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(js, '\n'), 0o644)
}
