// Package history records what happened during one chaos run: every lock
// attempt, every hold of the lock, every write to the protected resources
// and every fault, each stamped on one monotonic clock shared by all the
// clients of the run. The checkers and the timeline read it afterwards.
package history
