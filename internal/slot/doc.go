// Package slot computes Redis Cluster hash slots: which of the 16384 slots
// a key belongs to, the part of a key that decides it (its hash tag), and,
// for any slot, a short tag that lands in it, for naming one key per slot.
//
// A Redis Cluster serves a script only when every key it touches is in one
// slot; keys that share a hash tag, the text between the first '{' and the
// next '}', always are.
package slot

//go:generate go run gen.go
