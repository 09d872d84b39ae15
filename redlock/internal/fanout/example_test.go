package fanout_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
)

func ExampleRun() {
	res, err := fanout.Run(context.Background(), fanout.Config{Nodes: 5, Need: 3, Timeout: 50 * time.Millisecond},
		func(ctx context.Context, n *fanout.Node[string]) {
			// A node's operation answers from any goroutine, here at once.
			if n.Index() == 4 {
				n.Answer("", fanout.No, fmt.Errorf("node %d: refused", n.Index()))
				return
			}
			n.Answer(fmt.Sprint("granted by ", n.Index()), fanout.Yes, nil)
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
