package inventory

import "github.com/rdmactl/rdmactl/internal/nldev"

// Open is the source of an inspection command: the captured tree under
// root (--sysfs-root), else the live system over one RDMA netlink socket.
// sysfsOK: a command that can answer from sysfs alone (gids, counters)
// gets the live /sys without netlink when the socket cannot be opened.
// Close releases the socket.
func Open(root string, sysfsOK bool) (*Source, error) {
	if root != "" {
		return openCaptured(root) // a directory or a bundle file (bundle_capture.go)
	}
	c, err := nldev.Dial()
	if err != nil {
		if sysfsOK {
			return Captured(""), nil
		}
		return nil, err
	}
	return Live(c), nil
}

// Close releases what the source holds open (the netlink socket, an
// unpacked bundle).
func (s *Source) Close() error {
	return s.b.close()
}

// Fresh is a new Source over the same sockets and tree with nothing
// gathered yet: a command that samples again and again (top, monitor
// --poll) takes one per sample and keeps one socket for the whole run.
// Closing it is the original's job.
func (s *Source) Fresh() *Source {
	return &Source{tree: s.tree, b: s.b.fresh()}
}
