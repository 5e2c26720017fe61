package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Point is the result of one test point: messages of one length sent with
// one size class and priority.
type Point struct {
	// Series names the curve the point belongs to, such as "EtherGM low".
	Series string `json:"series"`
	// Size is the GM size class the messages were sent with.
	Size int `json:"size"`
	// Length is the message length in bytes.
	Length int `json:"length"`
	// Priority is "low" or "high".
	Priority string `json:"priority"`
	// Iterations is the number of timed round trips, and also the number
	// of messages of the bandwidth measurement.
	Iterations int `json:"iterations"`
	// HalfRTTus is the half round trip in microseconds: the mean over the
	// timed round trips.
	HalfRTTus float64 `json:"half_rtt_us"`
	// HalfRTTp50us is the median half round trip in microseconds (half
	// the median round trip).
	HalfRTTp50us float64 `json:"half_rtt_p50_us"`
	// BWMBs is the bandwidth in MB/s (10^6 bytes per second).
	BWMBs float64 `json:"bw_mbs"`
	// Errors counts the messages whose data differed from the pattern
	// (--verify), on either side.
	Errors int `json:"errors"`
	// FailedSends counts sends that completed with an error status.
	FailedSends int `json:"failed_sends"`
}

// Counters are the protocol and link counters of one port (or the sum of
// the ports of one side) over a run.
type Counters struct {
	Resends       uint64 `json:"resends"`        // data frames sent again
	NacksSent     uint64 `json:"nacks_sent"`     // nacks sent (no buffer, rejected, closed)
	NacksReceived uint64 `json:"nacks_received"` // nacks received
	Timeouts      uint64 `json:"timeouts"`       // retransmission timeouts
	Duplicates    uint64 `json:"duplicates"`     // duplicate data frames received
	KernelDrops   uint64 `json:"kernel_drops"`   // frames lost because the receive ring was full
	CRCErrors     uint64 `json:"crc_errors"`     // frames dropped because their CRC32C was wrong
	Malformed     uint64 `json:"malformed"`      // frames dropped as malformed
}

// Add returns the field-wise sum of c and d.
func (c Counters) Add(d Counters) Counters {
	return Counters{
		Resends: c.Resends + d.Resends, NacksSent: c.NacksSent + d.NacksSent,
		NacksReceived: c.NacksReceived + d.NacksReceived, Timeouts: c.Timeouts + d.Timeouts,
		Duplicates: c.Duplicates + d.Duplicates, KernelDrops: c.KernelDrops + d.KernelDrops,
		CRCErrors: c.CRCErrors + d.CRCErrors, Malformed: c.Malformed + d.Malformed,
	}
}

// Sub returns the field-wise difference c-d (counter deltas).
func (c Counters) Sub(d Counters) Counters {
	return Counters{
		Resends: c.Resends - d.Resends, NacksSent: c.NacksSent - d.NacksSent,
		NacksReceived: c.NacksReceived - d.NacksReceived, Timeouts: c.Timeouts - d.Timeouts,
		Duplicates: c.Duplicates - d.Duplicates, KernelDrops: c.KernelDrops - d.KernelDrops,
		CRCErrors: c.CRCErrors - d.CRCErrors, Malformed: c.Malformed - d.Malformed,
	}
}

// String formats the counters for the summary: resends, nacks (sent plus
// received), drops (kernel drops) and CRC errors, then the rest.
func (c Counters) String() string {
	return fmt.Sprintf("resends %d nacks %d drops %d crc-errors %d (nacks sent %d received %d, timeouts %d, duplicates %d, malformed %d)",
		c.Resends, c.NacksSent+c.NacksReceived, c.KernelDrops, c.CRCErrors,
		c.NacksSent, c.NacksReceived, c.Timeouts, c.Duplicates, c.Malformed)
}

// Summary sums up a run.
type Summary struct {
	// Points is the number of test points completed.
	Points int `json:"points"`
	// Messages counts the data messages the client sent and received.
	Messages int64 `json:"messages"`
	// Bytes counts the bytes of those messages.
	Bytes int64 `json:"bytes"`
	// DataErrors counts the messages whose data differed from the pattern,
	// on either side; BytesWrong counts the differing bytes.
	DataErrors int64 `json:"data_errors"`
	BytesWrong int64 `json:"bytes_wrong"`
	// FailedSends counts sends that completed with an error status.
	FailedSends int64 `json:"failed_sends"`
	// Seconds is the wall time of the run.
	Seconds float64 `json:"seconds"`
	// Local holds the counter deltas of this side's ports (both ports for
	// a loopback run).
	Local Counters `json:"local_counters"`
	// Remote holds the server's counter deltas of a two-host run.
	Remote *Counters `json:"remote_counters,omitempty"`
	// Error is the reason the run stopped early, if it did.
	Error string `json:"error,omitempty"`
}

// OK reports whether the run had no data error, no failed send and no
// early stop: the condition of exit status 0.
func (s *Summary) OK() bool { return s.DataErrors == 0 && s.FailedSends == 0 && s.Error == "" }

// Meta describes how a run was made.
type Meta struct {
	Tool       string    `json:"tool"`        // "gm_allsize"
	Mode       string    `json:"mode"`        // "loopback" or "remote"
	Date       time.Time `json:"date"`        // start of the run
	Host       string    `json:"host"`        // this host's name
	Remote     string    `json:"remote"`      // the server's host name (the local host for loopback)
	Node       uint32    `json:"node"`        // this host's node id
	RemoteNode uint32    `json:"remote_node"` // the server's node id
	Unit       string    `json:"unit"`        // the unit (interfaces)
	Port       int       `json:"port"`        // the client's port
	ServerPort int       `json:"server_port"` // the server's port
	LinkMTU    int       `json:"link_mtu"`    // MTU of the unit's interface
	Verify     bool      `json:"verify"`      // payloads checked against the pattern
	MinSize    int       `json:"min_size"`    // smallest size class tested
	MaxSize    int       `json:"max_size"`    // largest size class tested
	Iterations int       `json:"iterations"`  // --iterations (points may use fewer, see Point.Iterations)
	MaxBytes   int64     `json:"max_bytes"`   // byte budget per point and measurement
	Priorities []string  `json:"priorities"`  // "low", "high"
	Seed       uint64    `json:"seed"`        // seed of the random lengths
}

// Run is a whole run: what WriteJSON writes.
type Run struct {
	Meta    Meta    `json:"meta"`
	Points  []Point `json:"points"`
	Summary Summary `json:"summary"`
}

// Line formats p as gm_allsize prints it, for example
//
//	size 10 len     1016 prio low  iters  1000 half-rtt    12.30 us bw    512.40 MB/s
//
// followed by " errors N" when verify is set.
func Line(p Point, verify bool) string {
	s := fmt.Sprintf("size %2d len %8d prio %-4s iters %5d half-rtt %8.2f us bw %9.2f MB/s",
		p.Size, p.Length, p.Priority, p.Iterations, p.HalfRTTus, p.BWMBs)
	if verify {
		s += fmt.Sprintf(" errors %d", p.Errors)
	}
	if p.FailedSends > 0 {
		s += fmt.Sprintf(" failed-sends %d", p.FailedSends)
	}
	return s
}

// SummaryLines formats the summary as gm_allsize prints it after the
// point lines.
func SummaryLines(s *Summary) []string {
	mb := float64(s.Bytes) / 1e6
	lines := []string{
		fmt.Sprintf("summary: %d points, %d messages, %.1f MB in %.1f s, %d data errors (%d bytes), %d failed sends",
			s.Points, s.Messages, mb, s.Seconds, s.DataErrors, s.BytesWrong, s.FailedSends),
		"counters: " + s.Local.String(),
	}
	if s.Remote != nil {
		lines = append(lines, "server counters: "+s.Remote.String())
	}
	if s.Error != "" {
		lines = append(lines, "error: "+s.Error)
	}
	if s.OK() {
		lines = append(lines, "result: PASS")
	} else {
		lines = append(lines, "result: FAIL")
	}
	return lines
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSVHeader is the header line of WriteCSV.
var CSVHeader = []string{"series", "length", "half_rtt_us", "bw_mbs", "size", "priority", "iterations", "errors", "failed_sends", "half_rtt_p50_us"}

// WriteCSV writes the points as CSV with the header CSVHeader.
func WriteCSV(w io.Writer, points []Point) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for _, p := range points {
		rec := []string{
			p.Series, strconv.Itoa(p.Length), formatFloat(p.HalfRTTus), formatFloat(p.BWMBs),
			strconv.Itoa(p.Size), p.Priority, strconv.Itoa(p.Iterations),
			strconv.Itoa(p.Errors), strconv.Itoa(p.FailedSends), formatFloat(p.HalfRTTp50us),
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// formatFloat formats x for CSV: shortest form, empty for NaN.
func formatFloat(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// Sample is one measurement of a series at one length; NaN means not
// measured.
type Sample struct {
	Length    float64 // message length, bytes
	HalfRTTus float64 // half round trip, microseconds
	BWMBs     float64 // bandwidth, MB/s
}

// Series is a named curve: samples in file order.
type Series struct {
	Name    string   // legend entry
	Samples []Sample // in any order; see Collapse
}

// ErrBaseline is wrapped by ReadSeries errors about the file's contents.
var ErrBaseline = errors.New("report: bad baseline CSV")

// BaselineHeader is the header of a minimal baseline CSV (WriteSeries).
var BaselineHeader = []string{"series", "length", "half_rtt_us", "bw_mbs"}

// ReadSeries reads a baseline CSV (see the package documentation) and
// returns its series in order of first appearance.
func ReadSeries(r io.Reader) ([]Series, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrBaseline, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	iSeries, ok1 := col["series"]
	iLen, ok2 := col["length"]
	iLat, okLat := col["half_rtt_us"]
	iBW, okBW := col["bw_mbs"]
	if !ok1 || !ok2 || (!okLat && !okBW) {
		return nil, fmt.Errorf("%w: header %q needs series, length and half_rtt_us or bw_mbs", ErrBaseline, strings.Join(head, ","))
	}
	var out []Series
	index := map[string]int{}
	line := 1
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBaseline, err)
		}
		cell := func(i int, ok bool) (float64, error) {
			if !ok || i >= len(rec) || strings.TrimSpace(rec[i]) == "" {
				return math.NaN(), nil
			}
			return strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
		}
		if iSeries >= len(rec) {
			return nil, fmt.Errorf("%w: line %d: too few fields", ErrBaseline, line)
		}
		var s Sample
		var e1, e2, e3 error
		s.Length, e1 = cell(iLen, true)
		s.HalfRTTus, e2 = cell(iLat, okLat)
		s.BWMBs, e3 = cell(iBW, okBW)
		if err := errors.Join(e1, e2, e3); err != nil || math.IsNaN(s.Length) {
			return nil, fmt.Errorf("%w: line %d: %q: bad number", ErrBaseline, line, strings.Join(rec, ","))
		}
		name := rec[iSeries]
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, Series{Name: name})
		}
		out[i].Samples = append(out[i].Samples, s)
	}
	return out, nil
}

// WriteSeries writes series as a minimal baseline CSV (BaselineHeader).
func WriteSeries(w io.Writer, series []Series) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(BaselineHeader); err != nil {
		return err
	}
	for _, s := range series {
		for _, x := range s.Samples {
			if err := cw.Write([]string{s.Name, formatFloat(x.Length), formatFloat(x.HalfRTTus), formatFloat(x.BWMBs)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// PointSeries groups points into series (one per Point.Series, in order of
// first appearance) for plotting.
func PointSeries(points []Point) []Series {
	var out []Series
	index := map[string]int{}
	for _, p := range points {
		i, ok := index[p.Series]
		if !ok {
			i = len(out)
			index[p.Series] = i
			out = append(out, Series{Name: p.Series})
		}
		out[i].Samples = append(out[i].Samples, Sample{Length: float64(p.Length), HalfRTTus: p.HalfRTTus, BWMBs: p.BWMBs})
	}
	return out
}

// Collapse returns the series' samples with one sample per length, sorted
// by length: where several samples share a length (the same length sent
// with several size classes), each quantity is their median, NaN values
// left out.
func (s Series) Collapse() []Sample {
	byLen := map[float64][]Sample{}
	for _, x := range s.Samples {
		byLen[x.Length] = append(byLen[x.Length], x)
	}
	var out []Sample
	for l, xs := range byLen {
		var lat, bw []float64
		for _, x := range xs {
			if !math.IsNaN(x.HalfRTTus) {
				lat = append(lat, x.HalfRTTus)
			}
			if !math.IsNaN(x.BWMBs) {
				bw = append(bw, x.BWMBs)
			}
		}
		out = append(out, Sample{Length: l, HalfRTTus: Median(lat), BWMBs: Median(bw)})
	}
	slices.SortFunc(out, func(a, b Sample) int {
		switch {
		case a.Length < b.Length:
			return -1
		case a.Length > b.Length:
			return 1
		}
		return 0
	})
	return out
}

// Median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none. It does not modify xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// At returns the collapsed sample of s at length l, if there is one.
func (s Series) At(l float64) (Sample, bool) {
	for _, x := range s.Collapse() {
		if x.Length == l {
			return x, true
		}
	}
	return Sample{}, false
}
