// Package scenario holds the chaos suite's scenarios and the runner that
// plays one on a cluster: it starts the masters and the clients, sets up
// the scenario's partitions, runs the workload while the scenario injects
// its faults, heals what is left, runs the checkers, compares the
// outcome with the one the scenario expects, and draws the timeline.
//
// TestScenarios runs every scenario on every backend that
// REDLOCK_CHAOS_BACKEND asks for, and prints the report table.
package scenario
