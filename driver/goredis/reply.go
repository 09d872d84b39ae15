package goredis

import (
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/driver"
)

// ErrRedirected comes with a MOVED or ASK reply of a cluster node: the slot
// of the call's keys is moving or has moved to another master. The node ran
// nothing of the script, so the call left nothing behind; the next call is
// routed anew. It is not a driver.Error: the lock takes it as a missing vote,
// not as a misconfigured master.
var ErrRedirected = errors.New("goredis: the key's slot moved to another master")

// neutral turns a go-redis reply into the driver's neutral form. Replies of
// RESP3 clients take their RESP2 shape: a map becomes a flat array of keys
// and values (sorted by key, as a map has no order), a boolean an integer,
// a double or a big number a string.
func neutral(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = neutral(x)
		}
		return out
	case map[any]any:
		keys := make([]any, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		out := make([]any, 0, 2*len(v))
		for _, k := range keys {
			out = append(out, neutral(k), neutral(v[k]))
		}
		return out
	case redis.Error:
		return driver.Error(v.Error())
	case bool:
		if v {
			return int64(1)
		}
		return int64(0)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case *big.Int:
		return v.String()
	}
	return v // int64, string, nil
}

// scriptValue is neutral for a script's reply, which go-redis read for
// this call alone (a script's reply is never cached): an array is turned
// in place rather than copied.
func scriptValue(v any) any {
	a, ok := v.([]any)
	if !ok {
		return neutral(v)
	}
	for i, x := range a {
		a[i] = scriptValue(x)
	}
	return v // holds a: boxing a again would allocate
}

// answer returns a command's reply in the neutral form: its value, nil for
// a nil reply, a driver.Error for an error reply; or the error of a
// connection that failed.
func answer(cmd *redis.Cmd) (any, error) {
	v, err := cmd.Result()
	if err == nil {
		return neutral(v), nil
	}
	if err == redis.Nil {
		return nil, nil
	}
	var re redis.Error
	if errors.As(err, &re) {
		return driver.Error(re.Error()), nil
	}
	return nil, err
}

// serverError turns a server's error reply into a driver.Error (wrapped in
// ErrRedirected for a cluster's MOVED and ASK), and leaves other errors as
// they are.
func serverError(err error, cluster bool) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	code, _, _ := strings.Cut(msg, " ")
	switch {
	case cluster && (code == "MOVED" || code == "ASK"):
		return fmt.Errorf("%w: %s", ErrRedirected, msg)
	case strings.Contains(msg, "unauthenticated"):
		// Redis answers a long command on a connection that has not
		// authenticated with a protocol error, and closes it.
		return driver.Error("NOAUTH Authentication required (the master requires a password: give it in the client's options)")
	}
	return driver.Error(msg)
}

func isNoScript(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOSCRIPT")
}

// stale reports errors of a connection that died while it sat in the pool,
// as after a master restart: a fresh connection may well succeed. A reply
// of the master's is not stale.
func stale(err error) bool {
	var re redis.Error
	return !errors.As(err, &re) && driver.Stale(err)
}
