package redigo_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"time"

	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/redlocktest"
)

// A master given as a URL: password, database and timeouts in one string.
// New dials nothing; the first call does.
func ExampleNew() {
	p, err := redigo.New("redis://:secret@10.0.0.7:6379/2?dial_timeout=200ms")
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	fmt.Println(p.Addr())
	// Output: 10.0.0.7:6379
}

// The same settings as options, which override what a URL says.
func ExampleNew_options() {
	p, err := redigo.New("10.0.0.7:6379",
		redigo.WithAuth("locker", "secret"), // a Redis 6 ACL user
		redigo.WithDB(2),
		redigo.WithDialTimeout(200*time.Millisecond),
		redigo.WithReadTimeout(500*time.Millisecond),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	fmt.Println(p.Addr())
	// Output: 10.0.0.7:6379
}

// TLS by URL scheme, with a configuration of one's own; the server name is
// taken from the host.
func ExampleNew_tls() {
	p, err := redigo.New("rediss://cache.internal:6380", redigo.WithTLS(&tls.Config{MinVersion: tls.VersionTLS13}))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	fmt.Println(p.Addr())
	// Output: cache.internal:6380
}

// Mutual TLS from a URL: the CA that signs the master's certificate, and a
// client certificate for a master with tls-auth-clients yes (Redis's
// default). New reads the files at once, and names one it cannot use.
func ExampleNew_mutualTLS() {
	_, err := redigo.New("rediss://10.0.0.7:6380?tls_ca_file=/no/such/ca.pem&tls_cert_file=client.pem&tls_key_file=client.key")
	fmt.Println(err)
	// Output: redigo: address "rediss://10.0.0.7:6380?tls_ca_file=/no/such/ca.pem&tls_cert_file=client.pem&tls_key_file=client.key": CA file "/no/such/ca.pem": no such file or directory
}

// The same settings in code, for WithTLS: build the configuration once and
// use it for every master.
func ExampleTLSParams() {
	cfg, err := redigo.TLSParams{
		CAFile:     "/no/such/ca.pem",
		CertFile:   "client.pem",
		KeyFile:    "client.key",
		ServerName: "redis-1",
	}.Config()
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := redigo.New("10.0.0.7:6380", redigo.WithTLS(cfg))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	// Output: redigo: CA file "/no/such/ca.pem": no such file or directory
}

// Bad settings are reported by New, with the values named and the password
// hidden.
func ExampleNew_errors() {
	_, err := redigo.New("redis://admin:secret@10.0.0.7:0")
	fmt.Println(err)
	_, err = redigo.New("10.0.0.7:6379", redigo.WithPipelineConns(0), redigo.WithDialTimeout(-time.Second))
	fmt.Println(err)
	// Output:
	// redigo: address "redis://xxxxx@10.0.0.7:0": port "0" is not in 1-65535
	// redigo "10.0.0.7:6379": dial timeout -1s is negative; pipeline connections 0 not in 1..64
}

// Do runs a command of one's own on the connection the lock's calls share.
func ExampleRedis_Do() {
	master, err := redlocktest.Start(1) // an in-process master, for the example
	if err != nil {
		log.Fatal(err)
	}
	defer master.Close()

	p, err := redigo.New(master.Addrs()[0])
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	pong, err := p.Do(ctx, "PING") // dials within ctx if no connection is open
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pong)
	// Output: PONG
}
