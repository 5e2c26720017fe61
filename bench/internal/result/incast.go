package result

// IncastSend is an incast sender's summary (egm-gmperf -mode incast
// -client): what it sent, what it resent and why, and the congestion state
// it ended with.
type IncastSend struct {
	Tool     string `json:"tool"`
	Mode     string `json:"mode"`     // "incast-send"
	Messages uint64 `json:"messages"` // messages completed
	// DataFrames and Resends are the port's first transmissions and
	// retransmissions of data frames; the Resends* fields split Resends by
	// cause, the Cuts* fields count the congestion window's cuts by signal
	// (gm.Stats).
	DataFrames     uint64 `json:"data_frames"`
	Resends        uint64 `json:"resends"`
	ResendsLoss    uint64 `json:"resends_loss"`
	ResendsTimeout uint64 `json:"resends_timeout"`
	ResendsGoBack  uint64 `json:"resends_go_back"`
	CutsLoss       uint64 `json:"window_cuts_loss"`
	CutsDelay      uint64 `json:"window_cuts_delay"`
	// Window is the congestion window toward the sink at the end, MinRTT
	// and SRTT the round trips (microseconds) (gm.CongestionInfo).
	Window   int     `json:"window"`
	MinRTTus float64 `json:"min_rtt_us"`
	SRTTus   float64 `json:"srtt_us"`
	Note     string  `json:"note,omitempty"`
	Extra    string  `json:"extra,omitempty"`
}

// IncastSink is an incast receiver's summary (egm-gmperf -mode incast
// -server): the messages each sender delivered in the measured interval.
type IncastSink struct {
	Tool       string          `json:"tool"`
	Mode       string          `json:"mode"` // "incast-sink"
	Seconds    float64         `json:"seconds"`
	AppPayload int             `json:"app_payload_bytes"` // bytes per message
	GbpsApp    float64         `json:"gbps_app"`          // all senders, message payload
	Jain       float64         `json:"jain"`              // Jain's fairness of the senders' goodputs
	Senders    []SenderGoodput `json:"senders"`
	Note       string          `json:"note,omitempty"`
	Extra      string          `json:"extra,omitempty"`
}

// SenderGoodput is one sender's part of an IncastSink.
type SenderGoodput struct {
	Node     uint32  `json:"node"`
	Messages uint64  `json:"messages"`
	GbpsApp  float64 `json:"gbps_app"`
}

// TCPSink is the summary of a TCP receiver (egm-gmperf -mode tcp -server):
// the bytes it read in the measured interval.
type TCPSink struct {
	Tool    string  `json:"tool"`
	Mode    string  `json:"mode"` // "tcp-sink"
	Seconds float64 `json:"seconds"`
	Bytes   uint64  `json:"bytes"`
	Gbps    float64 `json:"gbps"` // TCP payload
}

// Jain returns Jain's fairness index of x, (Σx)² / (n Σx²): 1 when all
// are equal, 1/n when one has everything; 0 for no values or all zero.
func Jain(x []float64) float64 {
	s, s2 := 0.0, 0.0
	for _, v := range x {
		s += v
		s2 += v * v
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(x)) * s2)
}
