package token

// Default token counts of a GM port (gm_num_send_tokens and
// gm_num_receive_tokens on real GM hardware).
const (
	// DefaultSendTokens is GM_NUM_SEND_TOKENS: 64 send-queue slots less 3.
	DefaultSendTokens = 61
	// DefaultReceiveTokens is the receive-token count gm_num_receive_tokens
	// reports (GM_NUM_RECV_TOKENS is 254 in the header; the API reports 253).
	DefaultReceiveTokens = 253
)

// Counter is a bounded token counter: Total tokens of which Free are
// available. The zero value has no tokens; use NewCounter.
// A Counter is not safe for concurrent use.
type Counter struct {
	total, free int
}

// NewCounter returns a counter with n tokens, all free.
func NewCounter(n int) Counter { return Counter{total: n, free: n} }

// Total returns the number of tokens the counter was created with.
func (c *Counter) Total() int { return c.total }

// Free returns the number of tokens currently available.
func (c *Counter) Free() int { return c.free }

// InUse returns the number of tokens currently taken.
func (c *Counter) InUse() int { return c.total - c.free }

// TryAcquire takes one token and reports whether one was available. It never
// blocks.
func (c *Counter) TryAcquire() bool {
	if c.free == 0 {
		return false
	}
	c.free--
	return true
}

// Release returns one token. It reports false, and changes nothing, if every
// token is already free (a release without an acquire).
func (c *Counter) Release() bool {
	if c.free >= c.total {
		return false
	}
	c.free++
	return true
}
