package quorumlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock"
)

func ExampleQuorum() {
	for _, n := range []int{3, 4, 5} {
		fmt.Printf("%d masters: quorum %d, tolerates %d down\n", n, quorumlock.Quorum(n), n-quorumlock.Quorum(n))
	}
	// Output:
	// 3 masters: quorum 2, tolerates 1 down
	// 4 masters: quorum 3, tolerates 1 down
	// 5 masters: quorum 3, tolerates 2 down
}

func ExampleValidity() {
	drift := quorumlock.Drift{Factor: 0.01, Margin: 2 * time.Millisecond}
	// A 10s lock whose acquisition took 3ms is valid for 10s - 3ms - 102ms.
	fmt.Println(quorumlock.Validity(10*time.Second, 3*time.Millisecond, drift))
	// Output: 9.895s
}

func ExampleFanOut() {
	res, err := quorumlock.FanOut{Nodes: 5, Need: quorumlock.Quorum(5), Timeout: 50 * time.Millisecond}.Run(context.Background(),
		func(ctx context.Context, node int) (quorumlock.Vote, error) {
			if node == 4 {
				return quorumlock.No, fmt.Errorf("node %d: refused", node)
			}
			return quorumlock.Yes, nil
		})
	if err != nil {
		panic(err)
	}
	res.Wait(context.Background())
	fmt.Println("quorum reached:", res.OK())
	// Output: quorum reached: true
}
