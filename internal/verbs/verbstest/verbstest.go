// Package verbstest has the helpers the tests of internal/verbs and of its
// providers share.
package verbstest

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// WantQueueError checks that err is a *QueueError with fault f that names
// the device and says what was wrong (each of texts).
func WantQueueError(t *testing.T, err error, f verbs.QueueFault, dev string, texts ...string) *verbs.QueueError {
	t.Helper()
	var qe *verbs.QueueError
	if !errors.As(err, &qe) {
		t.Fatalf("got %v, want a *verbs.QueueError", err)
	}
	if qe.Fault != f {
		t.Errorf("fault %d, want %d: %v", qe.Fault, f, err)
	}
	if !errors.Is(err, verbs.ErrQueueCorrupt) {
		t.Errorf("errors.Is(%v, ErrQueueCorrupt) is false", err)
	}
	msg := err.Error()
	for _, s := range append([]string{dev + ": "}, texts...) {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q lacks %q", msg, s)
		}
	}
	return qe
}
