package gm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm/internal/proto"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/nodemap"
)

// PortInfo describes an open port: who holds it, what it knows of the node
// map, and its counters. Port.Info returns it, and every open port serves
// it, as one JSON document, to any process of its network namespace that
// connects to the port's abstract socket (package ctl); ListPorts collects
// it for every open port of a unit. This is what gm_board_info (the port
// table) and gm_counters (a unit's counters across its processes) read,
// without touching the ports' fast path: the query is answered on a
// goroutine of its own, which takes the port's mutex once.
//
// The JSON field names are given in the tags and are stable. A port that
// is still opening answers with its identity only (Unit to NodeID).
type PortInfo struct {
	// Unit is the unit's name; Interfaces are its rails.
	Unit       string   `json:"unit"`
	Interfaces []string `json:"interfaces,omitempty"`
	// Port is the port id.
	Port int `json:"port"`
	// PID is the process that holds the port: as that process sees it in
	// Port.Info, and as the caller's pid namespace sees it (from the
	// kernel, SO_PEERCRED) in ListPorts.
	PID int `json:"pid"`
	// Program is the base name of the holder's executable (os.Args[0]).
	Program string `json:"program,omitempty"`
	// Name is the port name given to Open.
	Name string `json:"name"`
	// Host is the port's host name (see Port.HostName).
	Host string `json:"host"`
	// MACs are the MAC addresses of the unit's rails, in the unit's order
	// (the first is the port's unique id, Port.UniqueID).
	MACs []string `json:"macs,omitempty"`
	// NodeID is the host's node id; 0 until a node map lists the host.
	NodeID NodeID `json:"node_id"`
	// MapVersion is the version of the node map the port follows (0 for a
	// static map or none); MapHosts the number of hosts in it; MapChanges
	// how many new maps the port has taken since it opened.
	MapVersion uint32 `json:"map_version"`
	MapHosts   int    `json:"map_hosts"`
	MapChanges uint64 `json:"map_changes"`
	// SendTokens and ReceiveTokens are the port's token counts;
	// FreeSendTokens and FreeReceiveTokens those not in use now.
	SendTokens        int `json:"send_tokens"`
	FreeSendTokens    int `json:"free_send_tokens"`
	ReceiveTokens     int `json:"receive_tokens"`
	FreeReceiveTokens int `json:"free_receive_tokens"`
	// Stats are the protocol engine's counters (Port.Stats).
	Stats ProtocolCounters `json:"stats"`
	// Link are the link counters, summed over the rails (Port.LinkStats).
	Link LinkCounters `json:"link"`
	// Rails are the state and counters of each rail (Port.RailStats).
	Rails []RailInfo `json:"rails"`
	// RxPorts are the target ports whose frames the port's links take
	// in, in increasing order: the port's own, and every closed port of
	// the unit while it is the lowest-numbered open one (it answers for
	// them; docs/GM-API.md §11). The kernel filters follow the open
	// ports at every map poll; RxPorts changes once every rail's filter
	// has changed. A link that cannot filter (without
	// link.CapPortFilter) takes in every port's frames whatever RxPorts
	// says.
	RxPorts []int `json:"rx_ports,omitempty"`
	// Congestion is the congestion control state of every host the port
	// sent to, in node order (docs/PROTOCOL.md, "Congestion control").
	Congestion []CongestionInfo `json:"congestion,omitempty"`
	// Error is set by ListPorts when the holder's answer could not be
	// read; only Unit, Port and PID are valid then.
	Error string `json:"error,omitempty"`
}

// ProtocolCounters are the protocol engine's counters (Stats) under
// stable JSON names. Counters only grow.
type ProtocolCounters struct {
	DataSent          uint64 `json:"data_sent"`          // data frames sent, first transmissions
	DataRetransmitted uint64 `json:"data_retransmitted"` // data frames sent again
	AcksSent          uint64 `json:"acks_sent"`
	NacksSent         uint64 `json:"nacks_sent"` // no buffer, rejected, port closed, stale session
	DataReceived      uint64 `json:"data_received"`
	Duplicates        uint64 `json:"duplicates"`    // data frames received twice
	OutOfWindow       uint64 `json:"out_of_window"` // data frames beyond the receive window
	Delivered         uint64 `json:"delivered"`     // messages delivered to the application
	NacksReceived     uint64 `json:"nacks_received"`
	AcksReceived      uint64 `json:"acks_received"`
	Timeouts          uint64 `json:"timeouts"`      // retransmission timeouts
	StaleDropped      uint64 `json:"stale_dropped"` // frames of a retired session dropped
	Malformed         uint64 `json:"malformed"`
	PartialBatches    uint64 `json:"partial_batches"`
	OpensSent         uint64 `json:"opens_sent"`       // new sessions proposed (OPEN)
	OpensReceived     uint64 `json:"opens_received"`   // OPEN frames received
	OpenAcksSent      uint64 `json:"open_acks_sent"`   // OPEN_ACK answers sent
	SessionsStarted   uint64 `json:"sessions_started"` // sessions adopted after a handshake
	// NACKs by reason, sent and received.
	NacksSentNoBuffer         uint64 `json:"nacks_sent_no_buffer"`
	NacksSentRejected         uint64 `json:"nacks_sent_rejected"`
	NacksSentPortClosed       uint64 `json:"nacks_sent_port_closed"`
	NacksSentStaleSession     uint64 `json:"nacks_sent_stale_session"`
	NacksReceivedNoBuffer     uint64 `json:"nacks_received_no_buffer"`
	NacksReceivedRejected     uint64 `json:"nacks_received_rejected"`
	NacksReceivedPortClosed   uint64 `json:"nacks_received_port_closed"`
	NacksReceivedStaleSession uint64 `json:"nacks_received_stale_session"`
	Misaddressed              uint64 `json:"misaddressed"` // frames for another node or port, or from a node not in the map or not from its MACs, dropped
	Ignored                   uint64 `json:"ignored"`      // frames of a type the port does not take, or control frames of no current session, dropped
	PeerResets                uint64 `json:"peer_resets"`  // peers whose sessions a node map change of their identity (or this host's) ended
	// Resends by cause (with those of partly sent batches they add up to
	// DataRetransmitted), and congestion windows shrunk by signal.
	RetransmitsLoss    uint64 `json:"resends_loss"`     // frames selective acks showed lost
	RetransmitsTimeout uint64 `json:"resends_timeout"`  // frames a retransmission timeout resent
	RetransmitsGoBack  uint64 `json:"resends_go_back"`  // frames the receiver asked for again
	WindowCutsLoss     uint64 `json:"window_cuts_loss"` // congestion windows halved on a loss
	WindowCutsDelay    uint64 `json:"window_cuts_delay"`
	LossesRandom       uint64 `json:"losses_random"` // frames lost that did not shrink the window (isolated: random loss)
	// Datagrams (DatagramSend): sent, delivered, dropped for want of a
	// buffer, dropped as replays (a counter already seen from the source).
	DatagramsSent     uint64 `json:"datagrams_sent"`
	DatagramsReceived uint64 `json:"datagrams_received"`
	DatagramsNoBuffer uint64 `json:"datagrams_no_buffer"`
	DatagramsReplayed uint64 `json:"datagrams_replayed"`
}

// CongestionInfo is the congestion control state of the streams from a
// port to one destination host.
type CongestionInfo struct {
	Node NodeID `json:"node"`
	// Window is the congestion window: the frames each stream to the
	// host may have in flight (fewer if its own window is smaller);
	// Ssthresh the slow-start threshold.
	Window   int `json:"window"`
	Ssthresh int `json:"ssthresh"`
	// InFlight is the frames in flight to the host, all streams.
	InFlight int `json:"in_flight"`
	// MinRTT is the smallest round trip measured recently, SRTT the
	// smoothed round trip, in microseconds (0: none measured yet).
	MinRTT float64 `json:"min_rtt_us"`
	SRTT   float64 `json:"srtt_us"`
}

func congestionInfo(cs []proto.CongestionState) []CongestionInfo {
	var out []CongestionInfo
	for _, c := range cs {
		out = append(out, CongestionInfo{
			Node: NodeID(c.Node), Window: c.Window, Ssthresh: c.Ssthresh, InFlight: c.InFlight,
			MinRTT: float64(c.MinRTT) / float64(time.Microsecond), SRTT: float64(c.SRTT) / float64(time.Microsecond),
		})
	}
	return out
}

func protocolCounters(s Stats) ProtocolCounters {
	return ProtocolCounters{
		DataSent: s.DataSent, DataRetransmitted: s.DataRetransmitted, AcksSent: s.AcksSent, NacksSent: s.NacksSent,
		DataReceived: s.DataReceived, Duplicates: s.Duplicates, OutOfWindow: s.OutOfWindow, Delivered: s.Delivered,
		NacksReceived: s.NacksReceived, AcksReceived: s.AcksReceived, Timeouts: s.Timeouts,
		StaleDropped: s.StaleDropped, Malformed: s.Malformed, PartialBatches: s.PartialBatches,
		OpensSent: s.OpensSent, OpensReceived: s.OpensReceived, OpenAcksSent: s.OpenAcksSent, SessionsStarted: s.SessionsStarted,
		NacksSentNoBuffer: s.NacksSentNoBuffer, NacksSentRejected: s.NacksSentRejected,
		NacksSentPortClosed: s.NacksSentPortClosed, NacksSentStaleSession: s.NacksSentStaleSession,
		NacksReceivedNoBuffer: s.NacksReceivedNoBuffer, NacksReceivedRejected: s.NacksReceivedRejected,
		NacksReceivedPortClosed: s.NacksReceivedPortClosed, NacksReceivedStaleSession: s.NacksReceivedStaleSession,
		Misaddressed: s.Misaddressed, Ignored: s.Ignored, PeerResets: s.PeerResets,
		RetransmitsLoss: s.RetransmitsLoss, RetransmitsTimeout: s.RetransmitsTimeout, RetransmitsGoBack: s.RetransmitsGoBack,
		WindowCutsLoss: s.WindowCutsLoss, WindowCutsDelay: s.WindowCutsDelay, LossesRandom: s.LossesRandom,
		DatagramsSent: s.DatagramsSent, DatagramsReceived: s.DatagramsReceived,
		DatagramsNoBuffer: s.DatagramsNoBuffer, DatagramsReplayed: s.DatagramsReplayed,
	}
}

// Add adds o's counters to c (to sum a unit's ports).
func (c *ProtocolCounters) Add(o ProtocolCounters) {
	c.DataSent += o.DataSent
	c.DataRetransmitted += o.DataRetransmitted
	c.AcksSent += o.AcksSent
	c.NacksSent += o.NacksSent
	c.DataReceived += o.DataReceived
	c.Duplicates += o.Duplicates
	c.OutOfWindow += o.OutOfWindow
	c.Delivered += o.Delivered
	c.NacksReceived += o.NacksReceived
	c.AcksReceived += o.AcksReceived
	c.Timeouts += o.Timeouts
	c.StaleDropped += o.StaleDropped
	c.Malformed += o.Malformed
	c.PartialBatches += o.PartialBatches
	c.OpensSent += o.OpensSent
	c.OpensReceived += o.OpensReceived
	c.OpenAcksSent += o.OpenAcksSent
	c.SessionsStarted += o.SessionsStarted
	c.NacksSentNoBuffer += o.NacksSentNoBuffer
	c.NacksSentRejected += o.NacksSentRejected
	c.NacksSentPortClosed += o.NacksSentPortClosed
	c.NacksSentStaleSession += o.NacksSentStaleSession
	c.NacksReceivedNoBuffer += o.NacksReceivedNoBuffer
	c.NacksReceivedRejected += o.NacksReceivedRejected
	c.NacksReceivedPortClosed += o.NacksReceivedPortClosed
	c.NacksReceivedStaleSession += o.NacksReceivedStaleSession
	c.Misaddressed += o.Misaddressed
	c.Ignored += o.Ignored
	c.PeerResets += o.PeerResets
	c.RetransmitsLoss += o.RetransmitsLoss
	c.RetransmitsTimeout += o.RetransmitsTimeout
	c.RetransmitsGoBack += o.RetransmitsGoBack
	c.WindowCutsLoss += o.WindowCutsLoss
	c.WindowCutsDelay += o.WindowCutsDelay
	c.LossesRandom += o.LossesRandom
	c.DatagramsSent += o.DatagramsSent
	c.DatagramsReceived += o.DatagramsReceived
	c.DatagramsNoBuffer += o.DatagramsNoBuffer
	c.DatagramsReplayed += o.DatagramsReplayed
}

// LinkCounters are a link's counters (link.Stats) under stable JSON names.
type LinkCounters struct {
	RxFrames     uint64 `json:"rx_frames"`
	RxBytes      uint64 `json:"rx_bytes"`
	TxFrames     uint64 `json:"tx_frames"`
	TxBytes      uint64 `json:"tx_bytes"`
	KernelDrops  uint64 `json:"kernel_drops"`  // frames lost because the receive ring was full
	QueueFreezes uint64 `json:"queue_freezes"` // times the kernel found the ring full
	CRCErrors    uint64 `json:"crc_errors"`    // frames dropped for a bad CRC32C
	Malformed    uint64 `json:"malformed"`     // frames dropped as malformed
	// AuthFailures and ForeignPartition count frames dropped for a
	// missing or bad cluster-key MAC and for another partition
	// (docs/SECURITY.md); always 0 without a cluster key.
	AuthFailures     uint64 `json:"auth_failures,omitempty"`
	ForeignPartition uint64 `json:"foreign_partition,omitempty"`
	Mode             string `json:"mode,omitempty"`
}

func linkCounters(s link.Stats) LinkCounters {
	return LinkCounters{
		RxFrames: s.RxFrames, RxBytes: s.RxBytes, TxFrames: s.TxFrames, TxBytes: s.TxBytes,
		KernelDrops: s.KernelDrops, QueueFreezes: s.QueueFreezes, CRCErrors: s.CRCErrors,
		Malformed: s.Malformed, AuthFailures: s.AuthFailures, ForeignPartition: s.ForeignPartition, Mode: s.Mode,
	}
}

// Add adds o's counters to c (Mode is kept).
func (c *LinkCounters) Add(o LinkCounters) {
	c.RxFrames += o.RxFrames
	c.RxBytes += o.RxBytes
	c.TxFrames += o.TxFrames
	c.TxBytes += o.TxBytes
	c.KernelDrops += o.KernelDrops
	c.QueueFreezes += o.QueueFreezes
	c.CRCErrors += o.CRCErrors
	c.Malformed += o.Malformed
	c.AuthFailures += o.AuthFailures
	c.ForeignPartition += o.ForeignPartition
}

// RailInfo is one rail of a port (RailStats under stable JSON names).
type RailInfo struct {
	Interface    string       `json:"interface"`
	Down         bool         `json:"down"`
	SuspectPeers int          `json:"suspect_peers"`
	Link         LinkCounters `json:"link"`
}

// program is this process's name for PortInfo.
var program = filepath.Base(os.Args[0])

// Info describes the port (see PortInfo). It takes the port's mutex once.
// On a closed port only the identity fields are set.
func (p *Port) Info() PortInfo {
	pi := PortInfo{
		Unit: p.unit.Name, Interfaces: p.unit.Interfaces, Port: p.id, PID: os.Getpid(), Program: program,
		Name: p.name, Host: p.HostName(), NodeID: p.NodeID(), MapChanges: p.mapChanges.Load(),
	}
	m := p.nodeMap.Load()
	if m != nil {
		pi.MapVersion = m.Version
	}
	pi.MapHosts = m.Len()
	if !p.ready.Load() || p.closed.Load() {
		return pi
	}
	for _, mac := range p.macs {
		pi.MACs = append(pi.MACs, nodemap.FormatMAC(mac))
	}
	pi.Link = linkCounters(p.LinkStats())
	for _, r := range p.RailStats() {
		pi.Rails = append(pi.Rails, RailInfo{Interface: r.Interface, Down: r.Down, SuspectPeers: r.SuspectPeers, Link: linkCounters(r.Link)})
	}
	pi.RxPorts = maskPorts(p.rxPorts.Load())
	p.mu.Lock()
	if !p.closed.Load() {
		pi.Stats = protocolCounters(p.eng.Stats())
		pi.Congestion = congestionInfo(p.eng.Congestion())
		st, rt := p.eng.SendTokens(), p.eng.Pools().Tokens()
		pi.SendTokens, pi.FreeSendTokens = st.Total(), st.Free()
		pi.ReceiveTokens, pi.FreeReceiveTokens = rt.Total(), rt.Free()
	}
	p.mu.Unlock()
	return pi
}

// maskPorts lists the ports of mask m (bit p for port p) in increasing
// order.
func maskPorts(m uint32) []int {
	var ports []int
	for id := range 32 {
		if m&(1<<id) != 0 {
			ports = append(ports, id)
		}
	}
	return ports
}

// ListPorts returns a PortInfo for every open port of unit in this
// network namespace, in port order, whichever process holds it. unit is
// a unit name as Open takes it: "" and "0" mean the default unit, a
// comma-separated list of interfaces is named after its first one. Each
// open port is asked over its abstract socket (PortInfo); PID is the
// holder's pid as the kernel reports it to the caller. A port whose
// answer cannot be read is listed with its PID and Error; the error
// returned then joins those failures, alongside the ports that answered.
func ListPorts(unit string) ([]PortInfo, error) {
	name := unit
	switch {
	case unit == "" || unit == "0":
		u, err := ResolveUnit(unit, nil)
		if err != nil {
			return nil, err
		}
		name = u.Name
	case strings.Contains(unit, ","):
		name = strings.Split(unit, ",")[0]
	}
	var (
		out  []PortInfo
		errs []error
	)
	for id := 0; id < NumPorts; id++ {
		var pi PortInfo
		pid, err := ctl.Query(ctl.PortName(name, id), &pi)
		switch {
		case errors.Is(err, ctl.ErrNotFound):
			continue
		case err != nil && pid == 0:
			errs = append(errs, fmt.Errorf("%w: port %d of unit %s: %w", UntranslatedSystemError, id, name, err))
			continue
		case err != nil:
			pi = PortInfo{Unit: name, Port: id, Error: err.Error()}
			errs = append(errs, fmt.Errorf("%w: port %d of unit %s: %w", UntranslatedSystemError, id, name, err))
		}
		pi.PID = pid
		out = append(out, pi)
	}
	return out, errors.Join(errs...)
}
