package goredis_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/redlock"
)

// Three masters through the application's own go-redis clients. Nothing is
// dialled until the first lock. With ContextTimeoutEnabled, a call that
// outlives the lock's node timeout is bounded by it, plus a second, rather
// than by the client's ReadTimeout.
func ExampleNew() {
	var masters []driver.Master
	for _, addr := range []string{"10.0.0.7:6379", "10.0.0.8:6379", "10.0.0.9:6379"} {
		client := redis.NewClient(&redis.Options{
			Addr:                  addr,
			Username:              "locker", // the ACL user the lock's commands run as
			Password:              "secret",
			ContextTimeoutEnabled: true,
		})
		defer client.Close() // the application's to close
		m, err := goredis.New(client)
		if err != nil {
			log.Fatal(err)
		}
		masters = append(masters, m)
	}
	c, err := redlock.New(masters, redlock.WithCloseDrivers())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // closes the masters too, before the clients
	fmt.Println(c.Nodes(), masters[0].Addr())
	// Output: 3 10.0.0.7:6379
}

// A lock client over the application's go-redis clients, one master each,
// in one line. Its Close closes what the lock holds, not the clients.
func ExampleNewClient() {
	var clients []redis.UniversalClient
	for _, addr := range []string{"10.0.0.7:6379", "10.0.0.8:6379", "10.0.0.9:6379"} {
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer client.Close() // the application's to close
		clients = append(clients, client)
	}
	c, err := goredis.NewClient(clients, redlock.WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(c.Nodes())
	// Output: 3
}

// A Redis Cluster as one master of the lock: each call goes to the master
// of its key's slot.
func ExampleNew_cluster() {
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"10.0.1.1:7000", "10.0.1.2:7000", "10.0.1.3:7000"},
		ContextTimeoutEnabled: true,
	})
	defer client.Close()
	m, err := goredis.New(client)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println(m.Addr())
	// Output: cluster(10.0.1.1:7000,10.0.1.2:7000,10.0.1.3:7000)
}

// A Sentinel failover client reaches whichever server is the master now:
// it has no address of its own, so it is named.
func ExampleWithName() {
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "locks-a",
		SentinelAddrs: []string{"10.0.2.1:26379", "10.0.2.2:26379", "10.0.2.3:26379"},
	})
	defer client.Close()
	_, err := goredis.New(client)
	fmt.Println(errors.Is(err, redlock.ErrInvalid))
	m, err := goredis.New(client, goredis.WithName("sentinel:locks-a"))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println(m.Addr())
	// Output:
	// true
	// sentinel:locks-a
}
