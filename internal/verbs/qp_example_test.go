package verbs_test

import (
	"errors"
	"log"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// A loopback RC connection rxe1 -> rxe0 and one RDMA WRITE, polled to
// completion. In a benchmark the two PathInfos travel over TCP instead.
// (Compiled, not run: it needs RDMA devices.)
func ExampleQP_Connect() {
	open := func(dev string) (*verbs.Context, *verbs.PD, *verbs.MR, *verbs.CQ, *verbs.QP) {
		d, err := provider.All().LookupDevice(dev)
		if err != nil {
			log.Fatal(err)
		}
		ctx, err := verbs.OpenDevice(d, verbs.Options{})
		if err != nil {
			log.Fatal(err)
		}
		pd, err := ctx.AllocPD()
		if err != nil {
			log.Fatal(err)
		}
		buf, err := verbs.NewBuffer(1 << 20)
		if err != nil {
			log.Fatal(err)
		}
		mr, err := pd.RegMR(buf, verbs.AccessAll)
		if err != nil {
			log.Fatal(err)
		}
		cq, err := ctx.CreateCQ(64)
		if err != nil {
			log.Fatal(err)
		}
		qp, err := ctx.CreateQP(pd, verbs.QPAttr{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
			MaxSendWR: 32, MaxRecvWR: 32, MaxInlineData: 64})
		if err != nil {
			log.Fatal(err)
		}
		return ctx, pd, mr, cq, qp
	}
	ctxA, _, mrA, cqA, qpA := open("rxe1")
	defer ctxA.Close() // destroys QP, CQ, MR, PD newest first
	ctxB, _, mrB, _, qpB := open("rxe0")
	defer ctxB.Close()

	var gidA, gidB [16]byte // each side's RoCE v2 GID (QueryGIDTable), here index 1
	a := verbs.PathInfo{QPN: qpA.QPN(), PSN: 0x1234, GID: gidA}
	b := verbs.PathInfo{QPN: qpB.QPN(), PSN: 0x5678, GID: gidB}
	if err := qpA.Connect(verbs.ConnectAttr{SGIDIndex: 1, PathMTU: vocab.MTU1024, Local: a, Remote: b}); err != nil {
		log.Fatal(err)
	}
	if err := qpB.Connect(verbs.ConnectAttr{SGIDIndex: 1, PathMTU: vocab.MTU1024, Local: b, Remote: a}); err != nil {
		log.Fatal(err)
	}

	// Preallocate WRs and WCs once; the loop then allocates nothing.
	wr := []verbs.SendWR{{WRID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGE:        verbs.SGE{Addr: mrA.Addr, Length: 4096, LKey: mrA.LKey},
		RemoteAddr: mrB.Addr, RKey: mrB.RKey}}
	wcs := make([]verbs.WC, 16)
	for {
		err := qpA.PostSend(wr)
		if errors.Is(err, verbs.ErrQueueFull) {
			_, _ = cqA.Poll(wcs) // make room, then retry
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		break
	}
	for {
		n, err := cqA.Poll(wcs)
		if err != nil {
			log.Fatal(err)
		}
		if n > 0 {
			if wcs[0].Status != 0 {
				log.Fatalf("WRITE failed: status %d", wcs[0].Status)
			}
			break
		}
	}
}
