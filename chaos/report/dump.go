package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Dump writes the whole record as plain text, one event per line in the
// order each kind was recorded: faults, notes, holds, fenced writes and
// attempts. It is for reading a run that went wrong after the fact.
func Dump(w io.Writer, rec history.Record) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	p("# faults")
	for _, f := range rec.Faults {
		p("%v\t%v\tnode %d\tclient %d\t%s\t%s", f.Start, f.End, f.Node, f.Client, f.Kind, f.Label)
	}
	p("# notes")
	for _, n := range rec.Notes {
		p("%v\t%s", n.At, n.Text)
	}
	p("# holds: id client worker key fence acquired until released caught skipped extend-error release-error token [do: lost masters]")
	for _, h := range rec.Holds {
		do := ""
		if h.ByDo {
			do = fmt.Sprintf("\tdo: lost %v masters %v", h.Lost, h.Masters)
		}
		p("%d\t%d\t%d\t%s\t%d\t%v\t%v\t%v\t%v\t%v\t%v\t%v\t%s%s", h.ID, h.Client, h.Worker, h.Key, h.Fence, h.Acquired, h.Until, h.Released, h.Caught, h.Skipped, h.ExtendErr, h.ReleaseErr, h.Token, do)
	}
	p("# fenced writes: seq key hold client fence at accepted")
	for _, x := range rec.Writes {
		p("%d\t%s\t%d\t%d\t%d\t%v\t%v", x.Seq, x.Key, x.Hold, x.Client, x.Fence, x.At, x.Accepted)
	}
	p("# attempts: client worker key start end ok killed token error")
	for _, a := range rec.Attempts {
		p("%d\t%d\t%s\t%v\t%v\t%v\t%v\t%s\t%v", a.Client, a.Worker, a.Key, a.Start, a.End, a.OK, a.Killed, a.Token, a.Err)
	}
	return b.Flush()
}
