package root

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSignalContext: once looked at, SIGTERM cancels it (and is caught,
// not fatal); stop gives the signal back; one never looked at asks for
// nothing and stops quietly.
func TestSignalContext(t *testing.T) {
	(&signalContext{}).stop()
	s := &signalContext{}
	if err := s.Err(); err != nil {
		t.Fatalf("Err before any signal: %v", err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	if !errors.Is(s.Err(), context.Canceled) {
		t.Errorf("Err after SIGTERM: %v", s.Err())
	}
	s.stop()
}
