package bench

import (
	"bufio"
	"errors"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Costs are counters of what a run spent, in the client process and on the
// masters. Take them before and after a run and subtract (see Meter).
type Costs struct {
	ClientCPU time.Duration // this process, user and system: the contender, the harness, any proxy
	Mallocs   uint64        // heap allocations
	Bytes     uint64        // heap bytes allocated
	// Syscalls counts this process's read and write system calls
	// (/proc/self/io syscr and syscw: sockets included, epoll and futex
	// not); NaN where that file cannot be read.
	Syscalls   float64
	MastersCPU time.Duration // INFO cpu used_cpu_sys + used_cpu_user, summed over the masters
	// MasterCPU is each master's part of MastersCPU, in the Meter's order.
	MasterCPU   []time.Duration
	Commands    uint64 // INFO stats total_commands_processed, summed
	Connections uint64 // INFO stats total_connections_received, summed
	// ServerIO is INFO stats total_reads_processed +
	// total_writes_processed, summed: the masters' reads from and writes
	// to client sockets, each serving as many commands as had arrived.
	ServerIO uint64
	// Wakeups counts the times the masters' main threads went to sleep
	// and were woken (voluntary_ctxt_switches of /proc/<pid>/status,
	// summed): about one per pass of the event loop that found nothing
	// more to do. NaN where a master's process cannot be read (not on this
	// host, or no /proc).
	Wakeups float64
}

// Sub returns c - d. MasterCPU is subtracted master by master when both
// have the same masters, and left out otherwise.
func (c Costs) Sub(d Costs) Costs {
	out := Costs{
		ClientCPU: c.ClientCPU - d.ClientCPU, Mallocs: c.Mallocs - d.Mallocs, Bytes: c.Bytes - d.Bytes,
		Syscalls: c.Syscalls - d.Syscalls, MastersCPU: c.MastersCPU - d.MastersCPU,
		Commands: c.Commands - d.Commands, Connections: c.Connections - d.Connections,
		ServerIO: c.ServerIO - d.ServerIO, Wakeups: c.Wakeups - d.Wakeups,
	}
	if len(c.MasterCPU) == len(d.MasterCPU) {
		out.MasterCPU = make([]time.Duration, len(c.MasterCPU))
		for i := range c.MasterCPU {
			out.MasterCPU[i] = c.MasterCPU[i] - d.MasterCPU[i]
		}
	}
	return out
}

// BusiestMaster returns the most CPU time one master used: with a core
// per master, the one that runs out first.
func (c Costs) BusiestMaster() time.Duration {
	var most time.Duration
	for _, d := range c.MasterCPU {
		most = max(most, d)
	}
	return most
}

// Meter reads Costs, the masters' part over one connection per master kept
// open, so that reading opens no connection. Its own INFO commands are left
// out of Commands.
type Meter struct {
	conns []redis.Conn
	pids  []string // the masters' process ids, from INFO server
	reads uint64
}

// NewMeter connects to the masters.
func NewMeter(addrs []string) (*Meter, error) {
	m := &Meter{}
	for _, a := range addrs {
		c, err := redis.Dial("tcp", a, redis.DialConnectTimeout(time.Second),
			redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(time.Second))
		if err != nil {
			m.Close()
			return nil, err
		}
		m.conns = append(m.conns, c)
		info, err := redis.String(c.Do("INFO", "server"))
		if err != nil {
			m.Close()
			return nil, err
		}
		m.pids = append(m.pids, infoFields(info)["process_id"])
	}
	return m, nil
}

// Close closes the connections.
func (m *Meter) Close() error {
	var errs []error
	for _, c := range m.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Read returns the counters now.
func (m *Meter) Read() (Costs, error) {
	var c Costs
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return c, err
	}
	c.ClientCPU = time.Duration(u.Utime.Nano() + u.Stime.Nano())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.Mallocs, c.Bytes = ms.Mallocs, ms.TotalAlloc
	c.Syscalls = selfSyscalls()
	for _, conn := range m.conns {
		info, err := redis.String(conn.Do("INFO", "cpu", "stats"))
		if err != nil {
			return c, err
		}
		f := infoFields(info)
		var cpu time.Duration
		for _, k := range []string{"used_cpu_sys", "used_cpu_user"} {
			secs, err := strconv.ParseFloat(f[k], 64)
			if err != nil {
				return c, errors.New("bench: INFO has no " + k)
			}
			cpu += time.Duration(secs * float64(time.Second))
		}
		c.MastersCPU += cpu
		c.MasterCPU = append(c.MasterCPU, cpu)
		for k, p := range map[string]*uint64{
			"total_commands_processed": &c.Commands, "total_connections_received": &c.Connections,
			"total_reads_processed": &c.ServerIO, "total_writes_processed": &c.ServerIO,
		} {
			n, err := strconv.ParseUint(f[k], 10, 64)
			if err != nil {
				return c, errors.New("bench: INFO has no " + k)
			}
			*p += n
		}
	}
	c.Wakeups = wakeups(m.pids)
	// Each reading's INFO counts once it has run: leave the earlier
	// readings' out.
	c.Commands -= m.reads * uint64(len(m.conns))
	m.reads++
	return c, nil
}

// infoFields returns an INFO reply's fields.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

// selfSyscalls returns syscr + syscw of /proc/self/io, or NaN.
func selfSyscalls() float64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return math.NaN()
	}
	defer f.Close()
	var n float64
	found := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok || (k != "syscr" && k != "syscw") {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return math.NaN()
		}
		n += x
		found++
	}
	if found != 2 {
		return math.NaN()
	}
	return n
}

// wakeups returns the voluntary context switches of the processes' main
// threads, summed, or NaN if one cannot be read.
func wakeups(pids []string) float64 {
	var n float64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + pid + "/status")
		if pid == "" || err != nil {
			return math.NaN()
		}
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return math.NaN()
				}
				n += x
				found = true
			}
		}
		if !found {
			return math.NaN()
		}
	}
	return n
}
