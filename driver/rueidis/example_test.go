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
// has. The lock uses the clients as they are, TLS, ACL user and database
// included, and leaves them open: the application closes them.
func Example() {
	servers, err := redlocktest.Start(3) // in-process masters, for the example
	if err != nil {
		log.Fatal(err)
	}
	defer servers.Close()
	var masters []driver.Master
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
		m, err := rueidisdriver.New(client)
		if err != nil {
			log.Fatal(err)
		}
		masters = append(masters, m)
	}
	c, err := redlock.New(masters,
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

// A client built with its dials counted: each call takes a dedicated
// connection, and the restart guard's health read goes only with calls on
// connections opened since the last one, instead of with every call.
func ExampleCountDials() {
	srv, err := redlocktest.Start(1) // an in-process master, for the example
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	opt := rueidis.ClientOption{InitAddress: srv.Addrs(), ForceSingleClient: true, DisableCache: true}
	dials := rueidisdriver.CountDials(&opt) // before the client is built
	client, err := rueidis.NewClient(opt)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, err := rueidisdriver.New(client, rueidisdriver.WithDials(dials))
	if err != nil {
		log.Fatal(err)
	}
	c, err := redlock.New([]driver.Master{m}, redlock.WithTrustUnreadable(), redlock.WithLogger(slog.New(slog.DiscardHandler)))
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
	fmt.Println("fenced:", l.Fence() > 0, "dialled:", dials.Total() > 0)
	// Output: fenced: true dialled: true
}

// New refuses what it cannot use.
func ExampleNew_errors() {
	_, err := rueidisdriver.New(nil)
	fmt.Println(err)
	_, err = rueidisdriver.New(nil, rueidisdriver.WithDials(nil), rueidisdriver.WithTimeout(-time.Second))
	fmt.Println(err)
	// Output:
	// rueidisdriver: invalid argument: nil client
	// rueidisdriver: invalid argument: nil client; timeout -1s is not positive; nil dial counts
}
