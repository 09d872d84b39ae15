package slot

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
