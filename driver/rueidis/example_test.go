package rueidisdriver_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlocktest"
)

// Three masters, each through a rueidis client the application already
// has, in one call. The lock uses the clients as they are, TLS, ACL user and
// database included; its Close leaves them open, for the application to
// close after it.
func Example() {
	servers, err := redlocktest.Start(3) // in-process masters, for the example
	if err != nil {
		log.Fatal(err)
	}
	defer servers.Close()
	var clients []rueidis.Client
	for _, addr := range servers.Addrs() {
		client, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{addr},
			// For the in-process master, which answers CLUSTER SLOTS; a
			// real standalone master needs neither.
			ForceSingleClient: true, DisableCache: true,
		})
		if err != nil {
			log.Fatal(err)
		}
		defer client.Close()
		clients = append(clients, client)
	}
	c, err := rueidisdriver.NewClient(clients,
		// What in-process masters need, not advice for real ones: they
		// report no state for the restart guard to read, and answer slowly.
		redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second),
		redlock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := c.TryLock(ctx, "report:daily", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	fmt.Println("fenced:", l.Fence() > 0)
	// Output: fenced: true
}

// One master with options of its own, among others given to redlock.New:
// here, the name the lock gives it in errors and logs.
func ExampleNew() {
	srv, err := redlocktest.Start(1) // an in-process master, for the example
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: srv.Addrs(), ForceSingleClient: true, DisableCache: true})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, err := rueidisdriver.New(client, rueidisdriver.WithName("orders-a"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := redlock.New([]driver.Master{m}, redlock.WithCloseDrivers(), redlock.WithTrustUnreadable(), redlock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // closes m too: WithCloseDrivers
	ctx := context.Background()
	l, err := c.TryLock(ctx, "report:daily", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	fmt.Println("master:", m.Addr(), "fenced:", l.Fence() > 0)
	// Output: master: orders-a fenced: true
}

// New and NewClient refuse what they cannot use.
func ExampleNew_errors() {
	_, err := rueidisdriver.New(nil)
	fmt.Println(err)
	_, err = rueidisdriver.New(nil, rueidisdriver.WithName(""), rueidisdriver.WithTimeout(-time.Second))
	fmt.Println(err)
	_, err = rueidisdriver.NewClient([]rueidis.Client{nil})
	fmt.Println(err)
	// Output:
	// redlock: invalid argument: rueidisdriver: nil client
	// redlock: invalid argument: rueidisdriver: nil client; timeout -1s is not positive; empty name
	// redlock: invalid argument: rueidisdriver: client 0 is nil
}
