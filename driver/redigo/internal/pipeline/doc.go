// Package pipeline is the redigo driver's connection to one master: RESP2
// commands of many callers written together on a few shared connections,
// their replies matched in order, each call bounded by its own deadline
// (see pipe for the rules), and a plain connection (Conn) for a handshake
// and for pub/sub.
//
// A call reads top to bottom in call.go (Start, Eval, EvalAsking, Do: the
// call's commands, its tries, its replies), then pipe.go (the shared
// connection: queueing, writing, reading, deadlines) and resp.go (RESP2).
// pipeline.go holds the Pipeline: its connections' slots, dialling and
// Close; conn.go the plain Conn.
package pipeline
