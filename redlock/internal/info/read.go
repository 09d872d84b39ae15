package info

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Replies is one health read: the replies to the questions Questions
// returns, in its order. A reply is a string, a []any, nil or an error.
type Replies struct {
	Server, Replication, Memory, Config, Stamp any
}

// Questions returns the commands of one health read; stampKey is the key of
// the fence stamp the acquire script leaves.
func Questions(stampKey string) [][]string {
	return [][]string{
		{"INFO", "server"},
		{"INFO", "replication"},
		{"INFO", "memory"},
		{"CONFIG", "GET", "append*"},
		{"GET", stampKey},
	}
}

// RepliesOf returns the replies in answers, the driver's answers to
// Questions; an answer missing at the end reads as an error.
func RepliesOf(answers []any) Replies {
	var r Replies
	for i, p := range []*any{&r.Server, &r.Replication, &r.Memory, &r.Config, &r.Stamp} {
		if i < len(answers) {
			*p = answers[i]
		} else {
			*p = errors.New("no answer")
		}
	}
	return r
}

// Fields is what the restart guard reads from one health read.
type Fields struct {
	// Unreadable says what could not be read; "" when everything needed
	// was. When it is set, the other fields are zero.
	Unreadable   string
	Uptime       time.Duration // INFO server uptime_in_seconds, as Redis reports it
	RunID        string        // INFO server run_id
	Version      string        // INFO server redis_version
	Role         string        // INFO replication role
	ReplID       string        // INFO replication master_replid
	ReplID2      string        // INFO replication master_replid2
	SecondOffset string        // INFO replication second_repl_offset
	MaxMemory    int64         // INFO memory maxmemory
	Policy       string        // INFO memory maxmemory_policy
	// Durable is appendonly yes with appendfsync always: a restart keeps
	// every write.
	Durable bool
	// ConfigDenied says why CONFIG GET failed, "" when it answered.
	ConfigDenied string
	Stamp        Stamp
}

// Stamp is the fence stamp the acquire script leaves on a master: the
// identity that counted its fences, and its uptime then.
type Stamp struct {
	Identity string        // run_id and master_replid, as Fields.Identity gives them
	Uptime   time.Duration // uptime_in_seconds when stamped
	OK       bool          // a stamp was there and could be read
}

// Parse reads the replies of one health read.
func Parse(r Replies) Fields {
	var f Fields
	var missing []string
	server, err := Section(r.Server)
	if err != nil {
		return Fields{Unreadable: "INFO server: " + err.Error()}
	}
	up, err := strconv.ParseInt(server["uptime_in_seconds"], 10, 64)
	if err != nil || up < 0 || up > maxSeconds {
		missing = append(missing, "uptime_in_seconds")
	}
	f.Uptime = time.Duration(up) * time.Second
	f.RunID, f.Version = server["run_id"], server["redis_version"]
	if f.RunID == "" {
		missing = append(missing, "run_id")
	}
	repl, err := Section(r.Replication)
	if err != nil {
		return Fields{Unreadable: "INFO replication: " + err.Error()}
	}
	f.Role, f.ReplID, f.ReplID2, f.SecondOffset = repl["role"], repl["master_replid"], repl["master_replid2"], repl["second_repl_offset"]
	if f.Role == "" {
		missing = append(missing, "role")
	}
	mem, err := Section(r.Memory)
	if err != nil {
		return Fields{Unreadable: "INFO memory: " + err.Error()}
	}
	f.Policy = mem["maxmemory_policy"]
	f.MaxMemory, err = strconv.ParseInt(mem["maxmemory"], 10, 64)
	if err != nil || f.Policy == "" {
		missing = append(missing, "maxmemory, maxmemory_policy")
	}
	if len(missing) > 0 {
		return Fields{Unreadable: "INFO has no " + strings.Join(missing, ", ")}
	}
	if kv, err := ConfigPairs(r.Config); err == nil {
		f.Durable = kv["appendonly"] == "yes" && kv["appendfsync"] == "always"
	} else {
		f.ConfigDenied = "CONFIG GET: " + err.Error()
	}
	if s, ok := r.Stamp.(string); ok {
		f.Stamp = parseStamp(s)
	}
	return f
}

// maxSeconds is the longest uptime a time.Duration holds, in seconds: a
// larger one would overflow into a negative duration.
const maxSeconds = int64(1<<63-1) / int64(time.Second)

// parseStamp reads "<run_id> <master_replid> <epoch> <uptime_in_seconds>".
func parseStamp(s string) Stamp {
	parts := strings.Fields(s)
	if len(parts) != 4 {
		return Stamp{}
	}
	up, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || up < 0 || up > maxSeconds {
		return Stamp{}
	}
	return Stamp{Identity: parts[0] + " " + parts[1], Uptime: time.Duration(up) * time.Second, OK: true}
}
