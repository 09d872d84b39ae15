package workload

import (
	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/redlock"
)

// Tokens returns a token generator for redlock.WithTokenGenerator that
// records every token client uses in h. Checker C4 needs the tokens of
// failed attempts, which the library does not return.
func Tokens(h *history.History, client int) func() (string, error) {
	return func() (string, error) {
		t, err := redlock.RandomToken()
		if err == nil {
			h.Token(client, t)
		}
		return t, err
	}
}
