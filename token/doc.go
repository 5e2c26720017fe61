// Package token implements GM's per-port resources: size-class arithmetic,
// send and receive token counters, and the provided-buffer pools a receiving
// port matches incoming messages against.
//
// # Size classes
//
// GM messages and receive buffers match on a size class, never on a length.
// A message of n bytes needs at least size MinSizeForLength(n) =
// ceil(log2(n+8)); a size s holds at most MaxLengthForSize(s) = 2^s - 8 bytes
// (0 for s < 3). These are GM's gm_min_size_for_length and
// gm_max_length_for_size, unchanged.
//
// # Tokens
//
// A GM port owns DefaultSendTokens (61) send tokens and DefaultReceiveTokens
// (253) receive tokens. A send takes one send token until its completion
// callback runs; a provided receive buffer takes one receive token until the
// receive event hands the buffer back. Counter is the bounded counter for
// either kind; it refuses (returns false) rather than blocks or panics.
//
// # Provided-buffer pools
//
// Pools keeps the buffers a port has provided in FIFO lists indexed by
// (priority, size), like the MCP's free_recv_token[priority][size] table. An
// incoming message takes the oldest buffer of exactly its (priority, size);
// there is no fallback to a larger class. Pools also keeps the per-priority
// acceptable-size masks of gm_set_acceptable_sizes. Pools preallocates all
// of its state, so providing and taking buffers allocates nothing.
//
// Nothing in this package is safe for concurrent use; the gm package guards
// it with the port mutex.
package token
