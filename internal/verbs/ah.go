package verbs

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
	prov providerAH
}
