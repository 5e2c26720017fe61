// Package pattern generates and checks the payload patterns of
// gm_allsize --verify.
//
// Every message carries a byte stream that is a deterministic function of
// its Key: the size class, the length, the sequence number of the message
// within its test point and the direction (request or echo). The stream is
// an xorshift64* generator seeded from the key with splitmix64, written
// eight bytes at a time in little-endian order, so generating or checking a
// payload costs about one multiply per eight bytes and no allocation. A
// receiver that knows the key regenerates the stream and compares it with
// what arrived; every differing byte is a mismatch.
//
// Because the sequence number is part of the key, a message delivered out
// of order, twice or into the wrong buffer shows up as a mismatch too, not
// only a flipped bit.
package pattern
