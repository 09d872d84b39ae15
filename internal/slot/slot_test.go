package slot

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTag(t *testing.T) {
	tests := []struct{ key, tag string }{
		{"", ""},
		{"foo", "foo"},
		{"{user1000}.following", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"}, // an empty tag hashes the whole key, and the search stops there
		{"{}", "{}"},
		{"{", "{"},
		{"}", "}"},
		{"}{", "}{"},
		{"x{", "x{"},
		{"{{a}}", "{a"},
		{"a{b}c{d}", "b"},
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"quorumlock:fence:{orders}", "orders"},
		{"{\x00\xff}", "\x00\xff"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.tag, Tag(tt.key), "Tag(%q)", tt.key)
	}
}

// Slots Redis documents or that redis-cli CLUSTER KEYSLOT gives.
func TestOf(t *testing.T) {
	tests := []struct {
		key  string
		slot int
	}{
		{"123456789", 0x31C3 % Count}, // CRC16-XMODEM's check value is 0x31C3
		{"", 0},
		{"foo", 12182},
		{"bar", 5061},
		{"hello", 866},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"{}", 15257},
		{"a{b}c{d}", 3300},
		{"b", 3300},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.slot, Of(tt.key), "Of(%q)", tt.key)
	}
}

// crc16Bitwise is CRC16-XMODEM one bit at a time, the definition that the
// generated table must agree with.
func crc16Bitwise(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func TestCRC16_TableMatchesTheBitwiseDefinition(t *testing.T) {
	for b := range 256 {
		s := string([]byte{byte(b)})
		assert.Equal(t, crc16Bitwise(s), crc16(s), "byte %#x", b)
		s = "k\x00" + s + "\xffz"
		assert.Equal(t, crc16Bitwise(s), crc16(s), "%q", s)
	}
}

func FuzzOf(f *testing.F) {
	for _, s := range []string{"", "{}", "{{a}}", "a{b}c{d}", "}{", "\x00{\xff}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		s := Of(key)
		if s < 0 || s >= Count {
			t.Fatalf("Of(%q) = %d", key, s)
		}
		if want := int(crc16Bitwise(Tag(key)) % Count); s != want {
			t.Fatalf("Of(%q) = %d, want %d", key, s, want)
		}
		// A tag with no '}' can be a key's hash tag; a whole key may not be.
		if tag := Tag(key); tag != "" && !strings.Contains(tag, "}") && Of("x{"+tag+"}y") != s {
			t.Fatalf("a key tagged with Tag(%q) = %q lands elsewhere", key, tag)
		}
	})
}

func TestTagFor_EverySlot(t *testing.T) {
	seen := make(map[string]int, Count)
	for s := range Count {
		tag, err := TagFor(s)
		require.NoError(t, err)
		require.Len(t, tag, tagLen)
		for _, c := range []byte(tag) {
			require.Contains(t, "HIJKLMNOhijklmno", string(c), "slot %d: tag %q", s, tag)
		}
		require.Equal(t, s, Of(tag), "slot %d: tag %q", s, tag)
		require.Equal(t, s, Of("quorumlock:fence-floor:{"+tag+"}"), "slot %d: tag %q", s, tag)
		if o, dup := seen[tag]; dup {
			t.Fatalf("slots %d and %d share the tag %q", o, s, tag)
		}
		seen[tag] = s
	}
	again, err := TagFor(1234)
	require.NoError(t, err)
	assert.Equal(t, seen[again], 1234, "equal slots give equal tags")
}

func TestTagFor_RejectsSlotsOutOfRange(t *testing.T) {
	for _, s := range []int{-1, Count, Count + 1, -Count, 1 << 40} {
		tag, err := TagFor(s)
		assert.ErrorIs(t, err, ErrInvalid, "slot %d", s)
		assert.Empty(t, tag)
	}
}

func TestTables_BaseSlotAndMasks(t *testing.T) {
	base := "HHHHH"
	assert.Equal(t, int(crc16Bitwise(base)%Count), baseSlot)
	require.Len(t, flipMasks, 3*14)
	for bit := range 14 {
		tag, err := TagFor(baseSlot ^ 1<<bit)
		require.NoError(t, err)
		assert.NotEqual(t, base, tag, "bit %d has flips", bit)
		assert.Equal(t, baseSlot^1<<bit, Of(tag), "bit %d", bit)
	}
}
