package allsize

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
	"github.com/ethergm/ethergm/gm"
)

// ProtocolVersion is the version of the control protocol in hello.
const ProtocolVersion = 1

// Control message types.
const (
	ctlHello   = "hello"   // client: start of a session
	ctlWelcome = "welcome" // server: hello accepted
	ctlBegin   = "begin"   // client: start of a measurement
	ctlReady   = "ready"   // server: buffers provided, send
	ctlDone    = "done"    // server: all messages of the measurement received
	ctlBye     = "bye"     // client: end of the session
	ctlByeAck  = "byeack"  // server: session over, with its counters
	ctlAbort   = "abort"   // either side: giving up, with a reason
)

// Measurement modes of a begin message.
const (
	modePingPong  = "pp" // one message in flight, each echoed
	modeBandwidth = "bw" // all send tokens in flight, one done at the end
)

// ctlMagic starts every control message.
var ctlMagic = [4]byte{'E', 'G', 'A', 'S'}

// ctlBufLen is the size of control receive and send buffers.
const ctlBufLen = 4096

// ErrCorruptControl means a control message failed its checksum or did not
// parse (its frames were corrupted on a path without CRC checks).
var ErrCorruptControl = errors.New("corrupted control message")

// ctlMsg is a control message. Control messages are JSON between a magic
// number and a CRC32C trailer, sent with size class CtlSize at low
// priority; they are kept short (a few hundred bytes).
type ctlMsg struct {
	Type    string `json:"t"`
	Version int    `json:"v,omitempty"`
	Host    string `json:"h,omitempty"`
	Verify  bool   `json:"verify,omitempty"`
	Points  int    `json:"np,omitempty"`

	// begin: the measurement.
	Point  int    `json:"n,omitempty"`
	Mode   string `json:"m,omitempty"`
	Size   uint8  `json:"s,omitempty"`
	Length int    `json:"l,omitempty"`
	Prio   uint8  `json:"p,omitempty"`
	Count  int    `json:"c,omitempty"` // messages the server receives (and echoes)
	Depth  int    `json:"d,omitempty"` // receive buffers the server keeps provided

	// done: the server's view of the measurement.
	Received   int      `json:"r,omitempty"`
	Errors     int      `json:"e,omitempty"`
	BytesWrong int      `json:"x,omitempty"`
	Mismatches []string `json:"mm,omitempty"`

	// byeack.
	Counters *report.Counters `json:"k,omitempty"`
	// abort.
	Reason string `json:"why,omitempty"`

	// From the receive event, not sent.
	node gm.NodeID
	port int
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode writes m into b and returns the length.
func (m *ctlMsg) encode(b []byte) (int, error) {
	js, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	n := 4 + len(js) + 4
	if n > len(b) {
		return 0, fmt.Errorf("control message of %d bytes too long", n)
	}
	copy(b, ctlMagic[:])
	copy(b[4:], js)
	binary.BigEndian.PutUint32(b[4+len(js):], crc32.Checksum(b[:4+len(js)], castagnoli))
	return n, nil
}

// decodeCtl parses a control message.
func decodeCtl(b []byte) (ctlMsg, error) {
	var m ctlMsg
	if len(b) < 10 || [4]byte(b[:4]) != ctlMagic {
		return m, fmt.Errorf("%w: no magic number (%d bytes)", ErrCorruptControl, len(b))
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return m, fmt.Errorf("%w: checksum mismatch (%d bytes)", ErrCorruptControl, len(b))
	}
	if err := json.Unmarshal(body[4:], &m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrCorruptControl, err)
	}
	if m.Type == "" {
		return m, fmt.Errorf("%w: no type", ErrCorruptControl)
	}
	return m, nil
}
