package redigo_test

import (
	"fmt"

	"github.com/quorumlock/quorumlock/driver/redigo"
)

// A node of the lock may be a Redis Cluster: Open makes a Cluster for a
// redis+cluster:// URL, which lists seed nodes. It connects on first use.
func ExampleOpen_cluster() {
	d, err := redigo.Open("redis+cluster://locker:secret@10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000?dial_timeout=500ms")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	c := d.(*redigo.Cluster)
	fmt.Println(c.Addr(), c.Sharded())
	// Output: 10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000 true
}
