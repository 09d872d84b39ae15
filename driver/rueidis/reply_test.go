package rueidisdriver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// rueidis speaks RESP3, whose replies have types RESP2 lacks; the driver
// gives them as RESP2 has them, the form the lock reads: INFO's verbatim
// text without its "txt:" format, CONFIG GET's map as a flat array of pairs
// (sorted by name), a Lua boolean as 1 or nil.
func TestEval_RESP3RepliesInRESP2Form(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := newMaster(t, standalone(t, srv[0].Addr()))
	s := driver.NewScript("bools", `return {true, false}`)
	check := &driver.Check{Questions: [][]string{{"INFO", "server"}, {"CONFIG", "GET", "maxmemory*"}}, Always: true}
	rep, err := m.Eval(ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{"k"}, Check: func(string) *driver.Check { return check }})
	require.NoError(t, err)
	assert.Equal(t, []any{int64(1), nil}, rep.Value)
	require.Len(t, rep.Answers, 2)
	info, _ := rep.Answers[0].(string)
	assert.True(t, strings.HasPrefix(info, "# Server\r\n"), "INFO as RESP2 has it: %.20q", info)
	pairs, ok := rep.Answers[1].([]any)
	require.True(t, ok, "%T", rep.Answers[1])
	var names []string
	for i := 0; i+1 < len(pairs); i += 2 {
		names = append(names, pairs[i].(string))
		assert.IsType(t, "", pairs[i+1])
	}
	assert.Equal(t, []string{"maxmemory", "maxmemory-clients", "maxmemory-eviction-tenacity", "maxmemory-policy", "maxmemory-samples"}, names)
}
