package scenario

// All returns every scenario, in the order.
func All() []*Scenario {
	out := []*Scenario{noFaults(), minorityKilled(), majorityKilled()}
	out = append(out, restarts()...)
	out = append(out, partitions(), pausedNode(), slowNode(), droppedReplies(), clockJump(), clientPause(), lockChurn(), doExtension())
	out = append(out, failovers()...)
	out = append(out, clientPauseUnguarded())
	out = append(out, clusterFailovers()...)
	out = append(out, queuedWaiters(), queuedWaitersLongLease())
	out = append(out, semaphores()...)
	out = append(out, readersWriters()...)
	return append(out, keySets()...)
}
