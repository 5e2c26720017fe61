package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/ethergm/ethergm/gm"
)

// portValue is a GM port id, 0..gm.NumPorts-1.
type portValue int

func (v *portValue) String() string { return strconv.Itoa(int(*v)) }
func (v *portValue) Type() string   { return "PORT" }

func (v *portValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= gm.NumPorts {
		return fmt.Errorf("a GM port is 0..%d", gm.NumPorts-1)
	}
	*v = portValue(n)
	return nil
}

// PortVar registers an option --name PORT holding a GM port id (0..15)
// into p, with the default def. Other values are a usage error.
func (c *Command) PortVar(p *int, name string, def int, usage string) {
	*p = def
	c.Flags.Var((*portValue)(p), name, usage)
}

// etherTypeValue is an Ethernet II EtherType: 0x0600..0xFFFF (smaller
// values are IEEE 802.3 lengths, not types).
type etherTypeValue uint16

// MinEtherType is the smallest EtherType; the two bytes of an Ethernet
// frame below it are a length (IEEE 802.3), not a type.
const MinEtherType = 0x0600

func (v *etherTypeValue) String() string { return fmt.Sprintf("0x%04x", uint16(*v)) }
func (v *etherTypeValue) Type() string   { return "ETHERTYPE" }

func (v *etherTypeValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil || n < MinEtherType || n > 0xFFFF {
		return errors.New("an EtherType is 0x0600..0xFFFF (smaller values are 802.3 lengths)")
	}
	*v = etherTypeValue(n)
	return nil
}

// EtherTypeVar registers an option --name ETHERTYPE (decimal or 0x
// hexadecimal, 0x0600..0xFFFF) into p, with the default def.
func (c *Command) EtherTypeVar(p *uint16, name string, def uint16, usage string) {
	*p = def
	c.Flags.Var((*etherTypeValue)(p), name, usage)
}

// Create opens the destination of an output option such as --json: "-"
// is w (standard output), anything else a file created or truncated. The
// returned close function closes the file (it does nothing for "-").
func Create(path string, w io.Writer) (io.Writer, func() error, error) {
	if path == "-" {
		return w, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}
