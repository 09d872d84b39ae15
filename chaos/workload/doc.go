// Package workload is what the chaos suite's clients do: contend for one
// key and, while they hold it, do a read-modify-write of a shared set (for
// checker C2) and a fenced write (for checker C3). Every attempt, hold and
// write goes into the run's history.
//
// A Gate lets a scenario freeze one holder inside its critical section, after
// it checked its validity and before it writes: the process pause that
// Redlock cannot protect against. HoldOff and Resume let a scenario quiesce
// the clients to look at the masters.
package workload
