// Package fanout runs one operation on N nodes in parallel, each bounded by
// its own timeout, and returns as soon as the outcome is decided: Need yes
// votes, or a quorum out of reach. Each node's value, vote and error come
// back together in its own entry of the result, once it is in, even after
// Run has returned: a caller can chain a clean-up after a straggler and read
// what it answered.
package fanout
