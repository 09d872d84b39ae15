package slot

import (
	"errors"
	"fmt"
	"strings"
)

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

// ErrInvalid marks a slot outside [0, Count).
var ErrInvalid = errors.New("slot: invalid argument")

// Tag characters: each is tagBase with any of its bits 0x01, 0x02, 0x04
// (flips 0 to 2) and 0x20 (flip 3) flipped, so one of "HIJKLMNO" or
// "hijklmno". A tag is tagLen of them, and never holds a
// brace, so "{"+tag+"}" inside a key makes the key hash as the tag.
const (
	tagLen  = 5
	tagBase = 'H'
)

// TagFor returns a five-letter tag whose slot is s, such as "LINLH": Of(tag)
// and Of("prefix:{"+tag+"}") both return s. Equal slots give equal tags. A
// slot outside [0, Count) gets ErrInvalid.
//
// CRC16 with a zero start is linear over messages of one length: flipping a
// set of bits in a message moves its CRC by the XOR of what each flip moves
// alone. flipMasks, written by gen.go, holds for each of the 14 slot bits a
// set of flips of "HHHHH" that moves the slot by that bit alone; the flips
// for s are the XOR of those for the bits where s differs from the slot of
// "HHHHH". Four letters are not enough: their 16 flips reach only 13 of the
// 14 slot bits.
func TagFor(s int) (string, error) {
	if s < 0 || s >= Count {
		return "", fmt.Errorf("%w: slot %d, want 0 to %d", ErrInvalid, s, Count-1)
	}
	return string(AppendTag(make([]byte, 0, tagLen), s)), nil
}

// AppendTag appends TagFor(s) to dst, s taken modulo Count.
func AppendTag(dst []byte, s int) []byte {
	s &= Count - 1
	var flips uint32
	for bit, diff := 0, s^baseSlot; diff != 0; bit, diff = bit+1, diff>>1 {
		if diff&1 != 0 {
			m := flipMasks[3*bit:]
			flips ^= uint32(m[0])<<16 | uint32(m[1])<<8 | uint32(m[2])
		}
	}
	for i := range tagLen {
		f := byte(flips >> (4 * i) & 0xF)
		dst = append(dst, tagBase^f&0x7^f>>3<<5)
	}
	return dst
}
