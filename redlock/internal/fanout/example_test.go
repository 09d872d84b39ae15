package fanout_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
)

func ExampleRun() {
	res, err := fanout.Run(context.Background(), fanout.Config{Nodes: 5, Need: 3, Timeout: 50 * time.Millisecond},
		func(ctx context.Context, node int) (string, fanout.Vote, error) {
			if node == 4 {
				return "", fanout.No, fmt.Errorf("node %d: refused", node)
			}
			return fmt.Sprint("granted by ", node), fanout.Yes, nil
		})
	if err != nil {
		panic(err)
	}
	res.Wait(context.Background())
	fmt.Println("quorum reached:", res.OK())
	rep, _ := res.Reply(0)
	fmt.Println(rep.Value)
	// Output:
	// quorum reached: true
	// granted by 0
}
