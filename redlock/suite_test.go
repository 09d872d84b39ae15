package redlock

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// The integration tests run twice in `make test`: as the default user, and
// with REDLOCK_TEST_ACL set, as the least-privilege ACL user the docs
// (docs/production.md) give for a namespace. Then every master has that user, every client
// logs in as it in that namespace, and the tests' own reads and writes of
// lock keys go below the namespace: a command or a key the docs' rule
// forgets fails the suite.

// suiteNS is the namespace of the docs' ACL rule.
const suiteNS = "app:lock:"

// aclDoc is the page that gives the ACL rules, for nodes and cluster nodes.
const aclDoc = "../docs/production.md"

func aclSuite() bool { return os.Getenv("REDLOCK_TEST_ACL") != "" }

// aclUser returns the redis-server arguments that create the docs' ACL
// user, in the ACL suite; none otherwise.
func aclUser(t *testing.T) []string {
	t.Helper()
	if !aclSuite() {
		return nil
	}
	return append([]string{"--user"}, strings.Fields(readmeACL(t, suiteNS))...)
}

// readmeACL returns the ACL rule docs/production.md gives for namespace
// ns: the line that starts "user app on" and grants ~<ns>*.
func readmeACL(t *testing.T, ns string) string {
	t.Helper()
	b, err := os.ReadFile(aclDoc)
	if err != nil {
		t.Fatalf("reading the ACL rule of %s: %v", aclDoc, err)
	}
	re := regexp.MustCompile(`(?m)^user app on .*~` + regexp.QuoteMeta(ns) + `\*.*$`)
	line := re.FindString(string(b))
	if line == "" {
		t.Fatalf("%s gives no ACL rule for namespace %q", aclDoc, ns)
	}
	return strings.TrimPrefix(line, "user ")
}

// urls returns the addresses the suite's clients use: in the ACL suite,
// logging in as the docs' user.
func urls(srv []*redistest.Server) []string {
	out := redistest.Addrs(srv)
	for i, a := range out {
		out[i] = suiteURL(a)
	}
	return out
}

// drivers returns a default driver for each of the servers, at the
// suite's address (see suiteURL), for tests that wrap one; a client given
// them closes them with WithCloseDrivers.
func drivers(t *testing.T, srv []*redistest.Server) []driver.Master {
	t.Helper()
	ms := make([]driver.Master, len(srv))
	for i, u := range urls(srv) {
		m, err := redigo.Open(u)
		require.NoError(t, err)
		ms[i] = m
	}
	return ms
}

// suiteURL returns the address a suite's client uses for addr: in the ACL
// suite, logging in as the docs' user.
func suiteURL(addr string) string {
	if aclSuite() {
		return "redis://app:secret@" + addr
	}
	return addr
}

// suiteClientAt is clientAt for masters started as the suite's: in the ACL
// suite it logs in as the docs' user, in its namespace. An address where
// nothing listens stays as it is.
func suiteClientAt(t *testing.T, addrs []string, opts ...Option) *Client {
	t.Helper()
	mapped := make([]string, len(addrs))
	for i, a := range addrs {
		mapped[i] = suiteURL(a)
	}
	return clientAt(t, mapped, suite()(opts...)...)
}

// suiteNodeTimeout is the suite's clients' node timeout: one a loaded
// machine meets, where the default's 50ms fails a healthy master now and
// then. The lock caps it at a tenth of the TTL; a test of the timeout
// itself passes its own.
const suiteNodeTimeout = 500 * time.Millisecond

// suite returns a function that appends opts to the options every client
// of the suite gets: the suite's node timeout and, in the ACL suite, the
// docs' rule's namespace.
func suite(base ...Option) func(opts ...Option) []Option {
	return func(opts ...Option) []Option {
		all := append([]Option{WithNodeTimeout(suiteNodeTimeout)}, base...)
		if aclSuite() {
			all = append(all, WithNamespace(suiteNS))
		}
		return append(all, opts...)
	}
}

// suiteNames is where the suite's clients keep their keys.
func suiteNames() scripts.Names {
	if aclSuite() {
		return scripts.Names{NS: suiteNS}
	}
	return scripts.Names{}
}

// stored is where a lock on key, or a pattern of such keys, lies on a master.
func stored(key string) string { return suiteNames().Lock(key) }
