// Package histogram counts latencies for the benchmarks: the redlock
// command's bench subcommand and the side-by-side comparison module.
//
// A Histogram keeps log-linear buckets in a fixed-size array, so a run of
// any length costs the same memory and recording never allocates: a
// benchmark that measures allocations per operation does not see its own
// harness. Durations below 256ns are counted exactly; above, each power of
// two is split into 128 buckets, so a quantile read back is within 1/256
// (about 0.4%) of the recorded value it stands for. Count, Mean, Min and Max
// are exact. Histograms merge, so each goroutine can keep its own without
// locking and the results are added up at the end.
package histogram
