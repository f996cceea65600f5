package inventory

import "github.com/rdmactl/rdmactl/internal/nldev"

// Config changes the running kernel: the writes behind link add/delete,
// dev set, system set and statistic, over the NLDEV socket of a live
// Source (whose reads resolve names to indexes first). Commands hold a
// Config, never the netlink client, so that every kernel access stays in
// this package.
type Config struct {
	c   *nldev.Client
	Src *Source
}

// OpenConfig opens the NLDEV socket for writes; close releases it.
func OpenConfig() (cfg *Config, close func(), err error) {
	c, err := nldev.Dial()
	if err != nil {
		return nil, nil, err
	}
	return &Config{c: c, Src: Live(c)}, func() { c.Close() }, nil
}

// Reads a write needs fresh, not from the Source's once-per-run cache:
// whether a name is taken, the device a name is now, the settings now.

// Devices dumps the devices now.
func (w *Config) Devices() ([]nldev.Device, error) { return w.c.Devices() }

// Device is the device called name now, or a *nldev.NotFoundError.
func (w *Config) Device(name string) (*nldev.Device, error) { return w.c.Device(name) }

// System reads the subsystem's settings now.
func (w *Config) System() (*nldev.System, error) { return w.c.System() }

// QPCounterByID reads QP counter cntn of dev/port now.
func (w *Config) QPCounterByID(dev, port, cntn uint32) (*nldev.QPCounter, error) {
	return w.c.QPCounterByID(dev, port, cntn)
}

// The writes (nldev's requests, as iproute2's rdma sends them).

// NewLink adds a software device (rxe, siw) on netdev.
func (w *Config) NewLink(name, typ, netdev string) error { return w.c.NewLink(name, typ, netdev) }

// DelLink removes software device dev.
func (w *Config) DelLink(dev uint32) error { return w.c.DelLink(dev) }

// Rename gives device dev a new name.
func (w *Config) Rename(dev uint32, name string) error { return w.c.Rename(dev, name) }

// SetNetns moves device dev to the namespace of nsFD.
func (w *Config) SetNetns(dev uint32, nsFD int) error { return w.c.SetNetns(dev, nsFD) }

// SetDIM turns adaptive interrupt moderation of dev on or off.
func (w *Config) SetDIM(dev uint32, on bool) error { return w.c.SetDIM(dev, on) }

// SetNetnsMode sets the subsystem's netns mode.
func (w *Config) SetNetnsMode(shared bool) error { return w.c.SetNetnsMode(shared) }

// SetPrivilegedQKey lets unprivileged processes use privileged Q_Keys.
func (w *Config) SetPrivilegedQKey(on bool) error { return w.c.SetPrivilegedQKey(on) }

// SetQPAutoMode sets dev/port's automatic QP counter mode.
func (w *Config) SetQPAutoMode(dev, port, mask uint32, opt *bool) error {
	return w.c.SetQPAutoMode(dev, port, mask, opt)
}

// BindQP binds QP lqpn of dev/port to counter cntn (nil: a new one).
func (w *Config) BindQP(dev, port, lqpn uint32, cntn *uint32) (uint32, error) {
	return w.c.BindQP(dev, port, lqpn, cntn)
}

// UnbindQP unbinds QP lqpn of dev/port from counter cntn.
func (w *Config) UnbindQP(dev, port, cntn, lqpn uint32) error {
	return w.c.UnbindQP(dev, port, cntn, lqpn)
}

// SetOptionalCounters enables exactly the optional counters indexes.
func (w *Config) SetOptionalCounters(dev, port uint32, indexes []uint32) error {
	return w.c.SetOptionalCounters(dev, port, indexes)
}
