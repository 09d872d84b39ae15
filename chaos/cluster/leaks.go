package cluster

import "go.uber.org/goleak"

// KnownLeaks are the goroutines toxiproxy can leave behind, for goleak to
// ignore. When a client closes its connection while a reply is in flight,
// toxiproxy's link stops writing to the client but its reader and toxics
// stay blocked sending the rest down an unbuffered channel nobody reads any
// more; stopping the proxy does not reach them, since the link has already
// dropped the connection from the proxy's list. Every other goroutine of a
// proxy (its accept loop, its links' writers) ends with the proxy and is
// still checked.
func KnownLeaks() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write"),
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"),
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*LatencyToxic).Pipe"),
	}
}
