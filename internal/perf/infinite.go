package perf

import (
	"context"
	"errors"
)

// --run_infinitely (perftest's RUN_INFINITELY, bandwidth tests): the
// duration loop runs period after period (-D, 5 s by default), with no
// margins and without draining the send queue in between, and each
// period prints its row (peak 0, as perftest's noPeak). The side that
// sends ends on Ctrl-C: it prints " User stopped traffic" (as perftest)
// after the partial period's row, closes, and Run returns the
// interruption (exit 130). Its peer sees the connection close: for it,
// that is how such a run ends, so it says so and returns nil. The send
// receiver prints its own rows per period (perftest's
// run_iter_bw_infinitely_server); the write/read server only waits.

// runInfinitely runs loop's periods until Ctrl-C or the peer's end.
func (s *Session) runInfinitely(ctx context.Context, r *runner, loop func() error) error {
	for {
		res, err := s.measure(ctx, r, loop)
		switch {
		case err == nil:
			s.addBW(res)
		case ctx.Err() != nil:
			// measure printed the partial period and set Interrupted.
			s.printf("\n User stopped traffic\n")
			return ctx.Err()
		case s.peerGone.Load():
			s.printf(" Peer %s closed the connection: end of the run\n", s.conn.RemoteAddr())
			return nil
		default:
			return err
		}
	}
}

// waitInfiniteEnd is the write/read server's wait in --run_infinitely:
// the client never reports, it closes the connection when it is stopped.
func (s *Session) waitInfiniteEnd() error {
	err := s.key(0, true)
	var pe *PeerError
	if errors.As(err, &pe) {
		s.printf(" Client closed connection\n")
		return nil
	}
	if err == nil {
		return errors.New("--run_infinitely: the client ended the run with a handshake; is it running with --run_infinitely?")
	}
	return err
}
