package redistest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StartSentinel starts a Sentinel that watches master under name, and
// returns its address. It notices a master down after one second, and the
// process is killed with the test.
func StartSentinel(tb testing.TB, master *Server, name string) string {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	err = os.WriteFile(conf, fmt.Appendf(nil, `port %d
bind 127.0.0.1
dir %s
logfile %s
sentinel monitor %s 127.0.0.1 %d 1
sentinel down-after-milliseconds %s 1000
sentinel failover-timeout %s 5000
`, port, dir, filepath.Join(dir, "sentinel.log"), name, master.Port, name, name), 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := DoAt(addr, "PING"); err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: sentinel %s did not answer within 5s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Failover asks the Sentinel at addr to fail name over. A Sentinel learns
// of the replica from the master's INFO and then asks the replica itself;
// until it has, it answers NOGOODSLAVE, so that answer is asked again, for
// at most 20 seconds.
func Failover(tb testing.TB, addr, name string) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := DoAt(addr, "SENTINEL", "FAILOVER", name)
		switch {
		case err == nil:
			return
		case !strings.Contains(err.Error(), "NOGOODSLAVE"):
			tb.Fatalf("redistest: SENTINEL FAILOVER %s: %v", name, err)
		case time.Now().After(deadline):
			tb.Fatalf("redistest: the sentinel found no replica to promote within 20s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
