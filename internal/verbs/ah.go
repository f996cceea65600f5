package verbs

// AH is an address handle: the destination of UD sends. It is created by
// the control path (CREATE_AH) and read by providers when they build a UD
// send WQE, so its fields are whatever the providers need.
type AH struct {
	// Handle is the kernel object handle returned by CREATE_AH.
	Handle uint32
}
