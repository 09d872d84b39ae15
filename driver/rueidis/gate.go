package rueidisdriver

import "github.com/quorumlock/quorumlock/driver"

// gate returns the gate of server ("" for a standalone client): see
// driver.Gate. A call on a dedicated connection (WithDials) goes through
// it. rueidis replaces a dedicated connection whose call timed out, and
// would open one for each call while the server answers nothing, which
// the server meets all at once when it runs again; the gate lets one call
// at a time through to a silent server, and fails the others at once with
// driver.ErrSilent. Calls pipelined on the client's shared connections
// (without WithDials) need no gate: rueidis keeps those connections
// through a call's deadline, and opens none per call.
func (m *Master) gate(server string) *driver.Gate {
	if g, ok := m.gates.Load(server); ok {
		return g.(*driver.Gate)
	}
	g, _ := m.gates.LoadOrStore(server, driver.NewGate(nil))
	return g.(*driver.Gate)
}
