// Package pipeline is the redigo driver's connection to one master: RESP2
// commands of many callers written together on a few shared connections,
// their replies matched in order, each call bounded by its own deadline
// (see pipe for the rules), and a plain connection (Conn) for a handshake
// and for pub/sub.
package pipeline
