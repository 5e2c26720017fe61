package wire

// crcShort is the longest input crc32cTwo computes itself where it can
// (amd64 with SSE4.2): from about 500 bytes on hash/crc32 runs three CRC
// chains side by side, which beats one chain by more than its dispatch
// costs.
const crcShort = 504
