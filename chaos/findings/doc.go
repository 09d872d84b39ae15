// Package findings holds reproducers of defects that the chaos suite found
// in the library. Each is a deterministic test against real redis-server
// processes that asserts what the library promises, so it fails while the
// defect is there and passes once it is fixed; the defects found so far are
// fixed, and these tests keep them so. See README.md in the chaos module for
// each finding and its evidence.
package findings
