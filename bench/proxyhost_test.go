package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proxyHostEnv, when set, makes the test binary a proxy host instead of
// running tests (see TestMain): its value lists the proxies as
// "delay=upstream" pairs separated by spaces.
const proxyHostEnv = "QUORUMLOCK_BENCH_PROXY_HOST"

// startProxies runs a DelayProxy per spec ("delay=upstream") in a child
// process, this test binary again, and returns their addresses in order.
// Out of the process, the proxies take nothing from the contenders' Go
// runtime and do not count in their CPU; the child ends with the test (its
// stdin closes), or with this process.
func startProxies(tb testing.TB, specs ...string) []string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), proxyHostEnv+"="+strings.Join(specs, " "))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(tb, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	lines := bufio.NewScanner(stdout)
	addrs := make([]string, 0, len(specs))
	for range specs {
		require.True(tb, lines.Scan(), "proxy host: %v", lines.Err())
		addrs = append(addrs, strings.TrimSpace(lines.Text()))
	}
	go io.Copy(io.Discard, stdout) // nothing more is expected
	return addrs
}

// proxyHost is the child's main: it starts the proxies, prints their
// addresses one per line, and runs until its stdin closes.
func proxyHost(specs string) int {
	// Each proxy's delivering goroutine blocks its thread in the kernel
	// timer, and needs a processor again at once when it wakes: more of
	// them than the machine's cores, so that the operating system, not the
	// Go scheduler, decides who runs.
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 4*len(strings.Fields(specs))))
	var ps []*DelayProxy
	defer func() {
		for _, p := range ps {
			p.Close()
		}
	}()
	for _, spec := range strings.Fields(specs) {
		d, upstream, ok := strings.Cut(spec, "=")
		delay, err := time.ParseDuration(d)
		if !ok || err != nil {
			fmt.Fprintf(os.Stderr, "proxy host: bad spec %q\n", spec)
			return 2
		}
		p, err := NewDelayProxy(upstream, delay)
		if err != nil {
			fmt.Fprintf(os.Stderr, "proxy host: %v\n", err)
			return 1
		}
		ps = append(ps, p)
		fmt.Println(p.Addr())
	}
	io.Copy(io.Discard, os.Stdin)
	return 0
}
