package quorumlock_test

import (
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
