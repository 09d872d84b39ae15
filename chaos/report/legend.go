package report

import "slices"

// kindStyle is how a fault of one kind is drawn.
type kindStyle struct {
	color string
	text  string // legend text
}

// style returns how a fault of the given kind is drawn.
func style(kind string) kindStyle {
	switch kind {
	case "killed":
		return kindStyle{"#d64541", "killed (SIGKILL)"}
	case "stopped":
		return kindStyle{"#a93226", "stopped (SIGTERM)"}
	case "paused":
		return kindStyle{"#e67e22", "paused (SIGSTOP)"}
	case "slow":
		return kindStyle{"#f1c40f", "slow replies"}
	case "replies dropped":
		return kindStyle{"#8e44ad", "replies dropped"}
	case "blackholed":
		return kindStyle{"#5d6d7e", "blackholed link"}
	case "rejected":
		return kindStyle{"#95a5a6", "rejecting link"}
	case "clock jump":
		return kindStyle{"#2471a3", "clock jump"}
	case "restarted":
		return kindStyle{"#1e8449", "started again"}
	case "replica detached":
		return kindStyle{"#48c9b0", "replica detached (lags from here)"}
	case "failover":
		return kindStyle{"#117864", "failover to the replica"}
	case "replica lags":
		return kindStyle{"#76d7c4", "a shard's replicas cut off (lag)"}
	case "client killed":
		return kindStyle{"#c0392b", "client process killed (SIGKILL), until started again"}
	case "dead token":
		return kindStyle{"#6c3483", "a killed client's token left on the master, until it expires"}
	case "shard killed":
		return kindStyle{"#cb4335", "a shard master killed, until its replica took over"}
	}
	return kindStyle{"#7f8c8d", kind}
}

// legend draws what each colour means and returns the height it took,
// which depends on how many rows the fault kinds of the run need.
func (t Timeline) legend(p func(string, ...any), y int) int {
	items := []struct{ color, text, extra string }{
		{"#2e86c1", "held the lock (fence inside when it fits)", ""},
		{"#f39c12", "holder frozen by the scenario", ""},
		{"url(#overrun)", "kept going past its validity", ""},
		{"#e74c3c", "C1: two holders at once", ` opacity="0.4"`},
	}
	seen := map[string]bool{}
	for _, f := range t.Record.Faults {
		seen[f.Kind] = true
	}
	var ks []string
	for k := range seen {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		s := style(k)
		items = append(items, struct{ color, text, extra string }{s.color, s.text, ""})
	}
	xPos, row := 16, 0
	for _, it := range items {
		wd := 24 + 7*len(it.text)
		if xPos+wd > width-right {
			xPos, row = 16, row+1
		}
		yy := y + 20*row
		p(`<rect x="%d" y="%d" width="14" height="12" fill="%s"%s/>`+"\n", xPos, yy, it.color, it.extra)
		p(`<text x="%d" y="%d" fill="#333" font-size="11">%s</text>`+"\n", xPos+18, yy+10, esc(it.text))
		xPos += wd
	}
	yy := y + 20*(row+1)
	p(`<text x="16" y="%d" fill="#c0392b" font-size="14" font-weight="bold">✕</text><text x="32" y="%d" fill="#333" font-size="11">fenced write rejected</text>`+"\n", yy+11, yy+10)
	p(`<rect x="180" y="%d" width="1" height="8" fill="#999"/><text x="188" y="%d" fill="#333" font-size="11">failed attempt</text>`+"\n", yy+2, yy+10)
	p(`<text x="300" y="%d" fill="#333" font-size="11">shaded bands across the clients: a fault on a whole master; light bands in a row: that client's own links</text>`+"\n", yy+10)
	return 20 * (row + 2)
}
