package info

import (
	"bufio"
	"fmt"
	"strings"
)

// Section parses an INFO reply into its fields, name to value; comment
// lines ("# Server") are skipped. An error reply is returned as the error.
func Section(reply any) (map[string]string, error) {
	if e, ok := reply.(error); ok {
		return nil, e
	}
	s, ok := reply.(string)
	if !ok {
		return nil, fmt.Errorf("unexpected reply %v", reply)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out, nil
}

// ConfigPairs reads CONFIG GET's reply: names and values, alternating. An
// error reply is returned as the error.
func ConfigPairs(reply any) (map[string]string, error) {
	if e, ok := reply.(error); ok {
		return nil, e
	}
	xs, ok := reply.([]any)
	if !ok || len(xs)%2 != 0 {
		return nil, fmt.Errorf("unexpected reply %v", reply)
	}
	out := make(map[string]string, len(xs)/2)
	for i := 0; i < len(xs); i += 2 {
		k, ok1 := xs[i].(string)
		v, ok2 := xs[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("unexpected reply %v", reply)
		}
		out[k] = v
	}
	return out, nil
}
