package check

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// reservedPrefix starts every key the library writes besides the lock keys
// themselves: fencing counters and the fence floor.
const reservedPrefix = "quorumlock:"

// queuePrefix starts the names of a key's waiting queue and its leases.
const queuePrefix = reservedPrefix + "queue"

// maxScanRounds bounds the SCAN loop on one master.
const maxScanRounds = 10_000

// Scan connects to every master directly and lists its lock keys with their
// tokens and TTLs, and the keys' waiting queues with their TTLs. It returns the keys of the masters that answered, and one
// error per master that did not (a master the scenario left down is not a
// failure of the check).
func Scan(ctx context.Context, addrs []string) ([]KeyState, []error) {
	nodes := make([][]string, len(addrs))
	for i, a := range addrs {
		nodes[i] = []string{a}
	}
	return ScanShards(ctx, nodes)
}

// ScanShards is Scan for nodes of several masters each, as a node that is
// a Redis Cluster has one per shard: nodes[i] lists node i's masters, and
// a key found on any of them is node i's.
func ScanShards(ctx context.Context, nodes [][]string) ([]KeyState, []error) {
	var keys []KeyState
	var errs []error
	for i, masters := range nodes {
		for _, a := range masters {
			ks, err := scanNode(ctx, i, a)
			if err != nil {
				errs = append(errs, fmt.Errorf("scan node %d (%s): %w", i, a, err))
				continue
			}
			keys = append(keys, ks...)
		}
	}
	return keys, errs
}

func scanNode(ctx context.Context, node int, addr string) ([]KeyState, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := redis.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	do := func(cmd string, args ...any) (any, error) {
		return redis.DoWithTimeout(conn, time.Until(deadline), cmd, args...)
	}
	var out []KeyState
	cursor := "0"
	for round := 0; round < maxScanRounds; round++ {
		v, err := redis.Values(do("SCAN", cursor, "COUNT", 500))
		if err != nil {
			return nil, err
		}
		if len(v) != 2 {
			return nil, fmt.Errorf("SCAN: unexpected reply %v", v)
		}
		cursor, _ = redis.String(v[0], nil)
		names, _ := redis.Strings(v[1], nil)
		for _, k := range names {
			if strings.HasPrefix(k, queuePrefix) {
				// A key's waiting queue (or its leases) must expire with its
				// leases: listed with its TTL and no tokens.
				ttl, err := redis.Int64(do("PTTL", k))
				if err != nil {
					return nil, err
				}
				if ttl != -2 {
					out = append(out, KeyState{Node: node, Key: k, PTTL: time.Duration(ttl) * time.Millisecond})
				}
				continue
			}
			if strings.HasPrefix(k, reservedPrefix) {
				continue
			}
			ks, err := readKey(do, node, k)
			if err != nil {
				return nil, err
			}
			if ks != nil {
				out = append(out, *ks)
			}
		}
		if cursor == "0" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("SCAN did not finish in %d rounds", maxScanRounds)
}

// readKey reads one lock key: a string holding a token, a reentrant
// lock's hash with one "hold:<token>" field per hold, or a semaphore's
// sorted set of permit tokens. It returns nil for a key that expired
// meanwhile.
func readKey(do func(string, ...any) (any, error), node int, key string) (*KeyState, error) {
	kind, err := redis.String(do("TYPE", key))
	if err != nil {
		return nil, err
	}
	ks := &KeyState{Node: node, Key: key}
	switch kind {
	case "none":
		return nil, nil
	case "string":
		t, err := redis.String(do("GET", key))
		if err == redis.ErrNil {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		ks.Tokens = []string{t}
	case "hash":
		fields, err := redis.Strings(do("HKEYS", key))
		if err != nil {
			return nil, err
		}
		for _, f := range fields {
			if t, ok := strings.CutPrefix(f, "hold:"); ok {
				ks.Tokens = append(ks.Tokens, t)
			}
		}
	case "zset":
		if ks.Tokens, err = redis.Strings(do("ZRANGE", key, 0, -1)); err != nil {
			return nil, err
		}
	}
	ms, err := redis.Int64(do("PTTL", key))
	if err != nil {
		return nil, err
	}
	if ms == -2 {
		return nil, nil
	}
	ks.PTTL = time.Duration(ms) * time.Millisecond
	return ks, nil
}
