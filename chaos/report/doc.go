// Package report turns chaos runs into things people read: a report table
// with one row per scenario and backend, and a timeline picture per run
// (SVG) with one row per client, a bar for each time it held the lock
// labelled with its fence, and the faults drawn as shaded bands.
package report
