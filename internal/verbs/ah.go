package verbs

import (
	"errors"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// AHAttr is an address vector: where a UD send goes (CreateAH), or the
// remote end of an RC/UC QP (RTRAttr.Dest). On RoCE ports (rxe, mlx5
// Ethernet) IsGlobal must be true and SGIDIndex must name a RoCE v2 GID of
// the same family as DGID; the kernel resolves the destination MAC from
// DGID through the neighbour table. On InfiniBand DLID and SL address the
// peer and the GRH is optional.
type AHAttr struct {
	Port         uint8 // 1-based port number
	IsGlobal     bool  // carry a GRH (required on RoCE)
	DGID         [16]byte
	SGIDIndex    uint8
	HopLimit     uint8 // RoCE v2: overwritten by the kernel's route lookup; 64 is a fine value
	TrafficClass uint8 // DSCP << 2 | ECN
	FlowLabel    uint32
	DLID         uint16 // InfiniBand only
	SL           uint8  // InfiniBand service level
	SrcPathBits  uint8
	StaticRate   uint8
}

// AH is an address handle: the destination of UD sends. It is created by
// CreateAH (CREATE_AH) and read by providers when they build a UD send WQE.
type AH struct {
	// Handle is the kernel object handle returned by CREATE_AH.
	Handle uint32
	Attr   AHAttr

	// num is the provider's AH number put in UD WQEs (rxe: ah_num from
	// struct rxe_create_ah_resp, which the kernel looks the AV up by).
	num  uint32
	prov ProviderAH
	ctx  *Context
	key  uint64
}

// Num is the provider's AH number for UD WQEs (AHCreator.CreateAH's).
//
//go:nosplit
func (ah *AH) Num() uint32 { return ah.num }

// CreateAH creates an address handle on pd for UD sends (CREATE_AH). On
// RoCE the kernel resolves the destination MAC from attr.DGID here, so the
// peer must be reachable.
func (c *Context) CreateAH(pd *PD, attr AHAttr) (*AH, error) {
	if pd == nil {
		return nil, errors.New("verbs: CreateAH needs a PD")
	}
	pc, err := c.dataPath()
	if err != nil {
		return nil, err
	}
	var handle uint32
	created := false
	exec := func(udataIn, udataOut []byte) (uint32, error) {
		cmd := abiCreateAH{PDHandle: pd.Handle, Attr: attr.ahAttr()}
		var resp abiCreateAHResp
		if err := c.writeCmd(cmdCreateAH, rawmem.Of(&cmd), rawmem.Of(&resp), udataIn, udataOut); err != nil {
			return 0, err
		}
		handle, created = resp.AHHandle, true
		return resp.AHHandle, nil
	}
	ah := &AH{ctx: c, Attr: attr}
	if cr, ok := pc.(AHCreator); ok {
		ah.prov, ah.num, err = cr.CreateAH(&AHRequest{Attr: attr}, exec)
	} else {
		_, err = exec(nil, nil)
	}
	if err != nil {
		if created {
			err = errors.Join(err, c.destroyAH(handle))
		}
		return nil, err
	}
	ah.Handle = handle
	ah.key = c.addChild(ah.Close)
	return ah, nil
}

func (c *Context) destroyAH(handle uint32) error {
	cmd := abiDestroyAH{AHHandle: handle}
	return c.writeCmd(cmdDestroyAH, rawmem.Of(&cmd), nil, nil, nil)
}

// Close destroys the AH (DESTROY_AH). Close it before its PD. Closing twice
// returns nil.
func (ah *AH) Close() error {
	if ah.ctx == nil {
		return nil
	}
	if err := ah.ctx.destroyAH(ah.Handle); err != nil {
		return err
	}
	ah.ctx.removeChild(ah.key)
	ah.ctx = nil
	if ah.prov != nil {
		return ah.prov.Release()
	}
	return nil
}
