package check

import "github.com/quorumlock/quorumlock/chaos/history"

// Writers is checker C7, for readers-writer locks. It returns every pair of
// holds of the same key whose intervals [Acquired, End) overlap where one
// of them is not Shared: a writer beside a reader or another writer. Read
// holds may overlap each other. With no Shared hold it is Exclusion.
func Writers(holds []history.Hold) []Violation {
	return overlapping(holds, func(a, b history.Hold) bool { return !a.Shared || !b.Shared })
}
