//go:build !amd64

package wire

// crc32cTwo returns the CRC32C of a followed by b.
func crc32cTwo(a, b []byte) uint32 {
	return crc32Update(crc32Update(0, a), b)
}
