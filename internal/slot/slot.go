package slot

import "strings"

// Count is the number of hash slots in a Redis Cluster; slots are numbered
// from 0 to Count-1.
const Count = 16384

// Of returns the hash slot of key, as Redis Cluster computes it: CRC16
// (XMODEM) of the key's Tag, modulo Count. Keys are bytes: key need not be
// valid UTF-8.
func Of(key string) int {
	return int(crc16(Tag(key)) % Count)
}

// Tag returns the part of key that decides its slot: the text between the
// first '{' and the first '}' after it, when that text is not empty, and
// otherwise the whole key. So "a{b}c{d}" hashes as "b", "{{a}}" as "{a",
// while "{}x", "}{" and "x{" hash whole.
func Tag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	n := strings.IndexByte(key[open+1:], '}')
	if n <= 0 { // no '}', or "{}": Redis hashes the whole key
		return key
	}
	return key[open+1 : open+1+n]
}

// crc16 is CRC16-XMODEM (polynomial 0x1021, start 0, no reflection, no
// final XOR), the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		j := int(byte(crc>>8)^s[i]) * 2
		crc = crc<<8 ^ (uint16(crcTable[j])<<8 | uint16(crcTable[j+1]))
	}
	return crc
}
