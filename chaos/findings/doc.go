// Package findings holds reproducers of defects that the chaos suite found
// in the library. Each is a deterministic test against real redis-server
// processes that asserts what the library promises, so it fails while the
// defect is there and passes once it is fixed. Those of fixed defects run
// as regression tests; those of open defects run only with
// REDLOCK_CHAOS_FINDINGS=1. See README.md in the chaos module for each
// finding, its evidence and a suggested fix.
package findings
