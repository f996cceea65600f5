package inventory

import "github.com/rdmactl/rdmactl/internal/sysfs"

// Capture copies what rdmactl reads of the source's sysfs tree into dst,
// to be read back as a captured tree (sysfs.FS.Capture).
func (s *Source) Capture(dst string) error { return s.fs.Capture(dst) }

// DestNotEmptyError is Capture's answer for a dst that exists and is not
// empty.
type DestNotEmptyError = sysfs.DestNotEmptyError
