// Package findings holds regression tests for the defects the chaos suite
// found in the library, all of them fixed. Each test is deterministic: it
// recreates, against real redis-server processes, the faults under which
// its defect showed, and asserts what the library promises there. The
// Findings section of README.md in the chaos module describes each defect.
package findings
