package bench

import (
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Settings of the go-redis clients, as close to NewRedigoPool's as go-redis
// allows: 1 s dial, read and write timeouts, and up to 64 connections to
// each server (go-redis caps the connections where redigo caps the idle
// ones; 64 is one per goroutine of the parallel runs). The rest is
// go-redis' defaults (RESP3, its own connection set-up).
const (
	goRedisTimeout = time.Second
	goRedisConns   = 64
)

// NewGoRedisClient returns a go-redis client to one master.
func NewGoRedisClient(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{
		Addr:         addr,
		DialTimeout:  goRedisTimeout,
		ReadTimeout:  goRedisTimeout,
		WriteTimeout: goRedisTimeout,
		PoolSize:     goRedisConns,
		MaxIdleConns: goRedisConns,
	})
}

// NewGoRedisCluster returns a go-redis cluster client to the Redis Cluster
// that the seeds ("host:port") belong to, with NewGoRedisClient's settings
// for each of its nodes.
func NewGoRedisCluster(seeds []string) *goredis.ClusterClient {
	return goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs:        seeds,
		DialTimeout:  goRedisTimeout,
		ReadTimeout:  goRedisTimeout,
		WriteTimeout: goRedisTimeout,
		PoolSize:     goRedisConns,
		MaxIdleConns: goRedisConns,
	})
}
