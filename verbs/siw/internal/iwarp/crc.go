package iwarp

import (
	"encoding/binary"
	"hash/crc32"
)

// MPA protects each FPDU with CRC-32C (Castagnoli): initial value and final
// XOR all ones, which is exactly hash/crc32 with the Castagnoli table. The
// CRC covers the FPDU from the first byte of ULPDU_Length through the pad
// bytes. On the wire it is stored least-significant byte first; siw stores
// it that way (the iSCSI digest convention), so that is what interoperates,
// even though every other MPA field is big-endian.
//
// hash/crc32 uses the SSE4.2/ARMv8 CRC instructions when given this exact
// table, so it is built once here and never per call.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32c returns the MPA CRC of b.
func CRC32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateCRC32c extends crc, the CRC of the bytes before b, over b. Start
// from 0: UpdateCRC32c(UpdateCRC32c(0, a), b) == CRC32c(a ++ b).
func UpdateCRC32c(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// PutCRC stores crc in MPA wire order (little-endian) into b[:4].
func PutCRC(b []byte, crc uint32) { binary.LittleEndian.PutUint32(b, crc) }

// GetCRC loads a CRC in MPA wire order from b[:4].
func GetCRC(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
