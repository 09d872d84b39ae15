package rueidisdriver

import "github.com/quorumlock/quorumlock/internal/slot"

// slotOf returns the Redis Cluster hash slot of key (see internal/slot),
// in the type the driver's slot map keeps.
func slotOf(key string) uint16 { return uint16(slot.Of(key)) }
