package redlocktest

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// logTB records what is logged through it.
type logTB struct {
	testing.TB
	mu    sync.Mutex
	lines []string
}

func (l *logTB) Log(args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range args {
		l.lines = append(l.lines, a.(string))
	}
}

func TestTestLogger_WarningsToTheTestLog_TrustedUnreadDropped(t *testing.T) {
	rec := &logTB{TB: t}
	log := testLogger(rec)
	log.Info("redlock: master not answering", "addr", "a")
	log.Warn("redlock: cannot read the master's state", "addr", "a", "state", "unreadable-trusted")
	log.Warn("redlock: master does not vote", "addr", "b", "state", "replica")
	log.Error("boom")

	assert.Len(t, rec.lines, 2, "%q", rec.lines)
	for _, l := range rec.lines {
		assert.NotContains(t, l, "time=")
		assert.False(t, strings.HasSuffix(l, "\n"))
	}
	assert.Contains(t, strings.Join(rec.lines, "|"), `level=WARN msg="redlock: master does not vote" addr=b state=replica`)
}
