package rueidisdriver

import (
	"errors"
	"sort"
	"strings"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// neutral returns a reply in the driver's neutral form (see driver.Master):
// an error reply as a driver.Error value, a failure to get a reply (network,
// deadline) as the error.
func neutral(res rueidis.RedisResult) (any, error) {
	if err := res.NonRedisError(); err != nil {
		return nil, err
	}
	msg, _ := res.ToMessage() // the error, if any, is in msg
	return message(&msg), nil
}

// message turns one RESP message into the neutral form. rueidis speaks
// RESP3 to servers that have it, where replies have types RESP2 lacks; they
// become what the same reply is in RESP2, as redigo and Lua see it: a map
// (CONFIG GET) is a flat array of its keys and values, a double a string, a
// boolean 1 or nil. RESP3 does not keep a map's order through rueidis, so
// the pairs come sorted by key.
func message(m *rueidis.RedisMessage) any {
	switch {
	case m.IsNil():
		return nil
	case m.IsInt64():
		n, _ := m.AsInt64()
		return n
	case m.IsArray():
		vs, _ := m.ToArray()
		out := make([]any, len(vs))
		for i := range vs {
			out[i] = message(&vs[i])
		}
		return out
	case m.IsMap():
		kv, _ := m.ToMap()
		keys := make([]string, 0, len(kv))
		for k := range kv {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]any, 0, 2*len(keys))
		for _, k := range keys {
			v := kv[k]
			out = append(out, k, message(&v))
		}
		return out
	case m.IsBool():
		if b, _ := m.AsBool(); b {
			return int64(1)
		}
		return nil
	}
	// Strings of every kind (bulk, status, verbatim, a double's digits) and
	// error replies: ToString gives an error reply's whole text, "ERR ..."
	// included, where its error form drops the "ERR ".
	s, err := m.ToString()
	if err != nil {
		return driver.Error(s)
	}
	if !m.IsString() && !m.IsFloat64() && len(s) >= 4 && s[3] == ':' {
		// A verbatim string (INFO's reply in RESP3) starts with its format,
		// "txt:"; RESP2 has the text alone.
		return s[4:]
	}
	return s
}

// refusal turns the error of a connection rueidis could not open because
// the master answered its setup (HELLO, AUTH, SELECT) with an error reply,
// which rueidis returns as the connection's error rather than as a reply,
// into a driver.Error, and leaves other errors as they are.
func refusal(err error) error {
	var re *rueidis.RedisError
	if !errors.As(err, &re) || re.IsNil() {
		return err
	}
	msg := re.Error()
	if strings.HasPrefix(msg, "NOAUTH ") {
		// HELLO says how to authenticate in the protocol; the lock's user
		// gives the password to the client.
		return driver.Error("NOAUTH Authentication required (the master requires a password: give it in the client's options, ClientOption.Password)")
	}
	return driver.Error(msg)
}
