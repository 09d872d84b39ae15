package redlock

import (
	"context"
	"sync"

	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
)

// trail records, for each master, the requests carrying one lock's token
// that were sent there: the acquisition's rounds and every retake. A
// release or a hand-over of the lock on a master first waits until all of
// them have returned, so that none can land after it on a connection of
// its own. A request that returned without a reply (a timeout, a dropped
// connection) may still be on its way; on that master a hand-over is not
// sent, and the release leaves the token's tombstone, which the acquire
// script obeys, so it cannot land either. A released token therefore never
// comes back.
type trail struct {
	mu   sync.Mutex
	sent [][]sentRequest
}

// sentRequest is one request of a trail: Done is closed once it has
// returned, and then noReply says whether its outcome on the master is
// unknown.
type sentRequest interface {
	Done() <-chan struct{}
	// returned reports whether the request has returned: Done is closed.
	returned() bool
	noReply() bool
	// onDone runs f once the request has returned: at once when it has,
	// otherwise in the goroutine that returns it.
	onDone(f func())
}

// roundRequest is a master's part of an acquisition round.
type roundRequest struct{ *fanout.Node[ask] }

func (r roundRequest) onDone(f func()) { r.OnDone(f) }

func (r roundRequest) returned() bool { return r.Returned() }

func (r roundRequest) noReply() bool {
	rep, _ := r.Reply()
	return rep.Value.err != nil && !rep.Value.unsent
}

// retakeRequest is a retake sent to one master.
type retakeRequest struct {
	done fanout.Signal
	lost bool // the request got no reply; set before done fires
}

func newRetakeRequest() *retakeRequest { return &retakeRequest{} }

func (r *retakeRequest) Done() <-chan struct{} { return r.done.Done() }

func (r *retakeRequest) returned() bool { return r.done.Fired() }

func (r *retakeRequest) noReply() bool { return r.lost }

func (r *retakeRequest) onDone(f func()) { r.done.OnDone(f) }

// finish records that the retake returned, and whether it got no reply.
func (r *retakeRequest) finish(noReply bool) {
	r.lost = noReply
	r.done.Fire()
}

func newTrail(nodes int, rounds []round) *trail {
	t := &trail{sent: make([][]sentRequest, nodes)}
	k := len(rounds)
	all := make([]sentRequest, nodes*k) // one allocation for the rounds' requests; a retake appends past it
	for i := range nodes {
		t.sent[i] = all[i*k : i*k : (i+1)*k]
		for _, r := range rounds {
			t.sent[i] = append(t.sent[i], roundRequest{r.res.Node(i)})
		}
	}
	return t
}

// add records a request sent to master i.
func (t *trail) add(i int, s sentRequest) {
	t.mu.Lock()
	t.sent[i] = append(t.sent[i], s)
	t.mu.Unlock()
}

// waitReturned waits until every request recorded for master i has returned, and
// reports whether any of them got no reply. Each request is bounded by the
// node timeout, so without a ctx deadline the wait is bounded too.
func (t *trail) waitReturned(ctx context.Context, i int) (unsure bool, err error) {
	for _, s := range t.of(i) {
		if !s.returned() {
			select {
			case <-s.Done():
			case <-ctx.Done():
				return true, ctx.Err()
			}
		}
		unsure = unsure || s.noReply()
	}
	return unsure, nil
}

// allReturned is waitReturned without the wait: it reports ok when every request
// recorded for master i has returned, and then whether any of them got no
// reply.
func (t *trail) allReturned(i int) (unsure, ok bool) {
	for _, s := range t.of(i) {
		if !s.returned() {
			return false, false
		}
		unsure = unsure || s.noReply()
	}
	return unsure, true
}

// repliedOn reports whether every request recorded for master i has
// returned with a reply: nothing of the trail can land there any more. A
// nil trail, which records nothing, has replied everywhere.
func (t *trail) repliedOn(i int) bool {
	if t == nil {
		return true
	}
	unsure, ok := t.allReturned(i)
	return ok && !unsure
}

// whenReturned is waitReturned without a goroutine waiting: it runs f once every
// request recorded for master i has returned, with whether any of them got
// no reply; at once when they have, otherwise in the goroutine that returns
// the last of them. Each request is bounded by the node timeout, so f runs
// within it.
func (t *trail) whenReturned(i int, f func(unsure bool)) {
	unsure := false
	for _, s := range t.of(i) {
		if !s.returned() {
			s.onDone(func() { t.whenReturned(i, f) })
			return
		}
		unsure = unsure || s.noReply()
	}
	f(unsure)
}

// of returns the requests recorded for master i so far.
func (t *trail) of(i int) []sentRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent[i]
}
