package rdmacm

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"
)

// EventType is enum rdma_cm_event_type (kernel include/rdma/rdma_cm.h;
// librdmacm's rdma_cma.h has the same numbers).
type EventType uint32

const (
	EventAddrResolved    EventType = 0
	EventAddrError       EventType = 1
	EventRouteResolved   EventType = 2
	EventRouteError      EventType = 3
	EventConnectRequest  EventType = 4
	EventConnectResponse EventType = 5
	EventConnectError    EventType = 6
	EventUnreachable     EventType = 7
	EventRejected        EventType = 8
	EventEstablished     EventType = 9
	EventDisconnected    EventType = 10
	EventDeviceRemoval   EventType = 11
	EventMulticastJoin   EventType = 12
	EventMulticastError  EventType = 13
	EventAddrChange      EventType = 14
	EventTimewaitExit    EventType = 15
)

var eventNames = [...]string{"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR",
	"CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED",
	"ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR",
	"ADDR_CHANGE", "TIMEWAIT_EXIT"}

func (e EventType) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return fmt.Sprintf("EVENT_%d", uint32(e))
}

// ConnParam is what a connect, accept or connect-request event carries
// (struct rdma_ucm_conn_param).
type ConnParam struct {
	QPNum              uint32
	QKey               uint32
	PrivateData        []byte // at most 256 bytes
	SRQ                bool
	ResponderResources uint8 // RDMA READs the side accepts in flight
	InitiatorDepth     uint8 // RDMA READs the side issues in flight
	FlowControl        uint8
	RetryCount         uint8
	RNRRetryCount      uint8
}

// Event is one decoded rdma_ucm_event_resp.
type Event struct {
	UID  uint64    // the uid given to CreateID (0 for a new connection's id)
	ID   uint32    // the kernel's id handle; for CONNECT_REQUEST the new id
	Type EventType // what happened
	// Status is the event's status: 0, a negative errno (address and route
	// errors, unreachable), or for REJECTED the IB CM reject reason.
	Status int32
	Conn   ConnParam // connection events (not for UD ids)
}

// eventRespSize is the size of the event the kernel writes.
const eventRespSize = int(unsafe.Sizeof(eventResp{}))

// minEventSize is what every kernel since ECE (5.9) writes at least: the
// event up to its reserved word.
const minEventSize = int(unsafe.Offsetof(eventResp{}.Reserved))

// DecodeEvent decodes the kernel's event record. b is untrusted: every
// length is checked, and an event type the kernel does not define is an
// error, not a guess.
func DecodeEvent(b []byte) (Event, error) {
	if len(b) < minEventSize {
		return Event{}, fmt.Errorf("rdma_cm event is %d bytes, want at least %d", len(b), minEventSize)
	}
	le := binary.LittleEndian // host order; rdmactl builds for little-endian amd64 and arm64
	ev := Event{
		UID:    le.Uint64(b[0:]),
		ID:     le.Uint32(b[8:]),
		Type:   EventType(le.Uint32(b[12:])),
		Status: int32(le.Uint32(b[16:])),
	}
	if ev.Type > EventTimewaitExit {
		return ev, fmt.Errorf("rdma_cm event type %d is unknown", uint32(ev.Type))
	}
	p := b[20 : 20+int(unsafe.Sizeof(connParam{}))]
	n := int(p[8+maxPrivateData])
	if n > maxPrivateData {
		return ev, fmt.Errorf("rdma_cm event %s has %d bytes of private data, at most %d", ev.Type, n, maxPrivateData)
	}
	ev.Conn = ConnParam{
		QPNum:              le.Uint32(p[0:]),
		QKey:               le.Uint32(p[4:]),
		SRQ:                p[8+maxPrivateData+1] != 0,
		ResponderResources: p[8+maxPrivateData+2],
		InitiatorDepth:     p[8+maxPrivateData+3],
		FlowControl:        p[8+maxPrivateData+4],
		RetryCount:         p[8+maxPrivateData+5],
		RNRRetryCount:      p[8+maxPrivateData+6],
	}
	if n > 0 {
		ev.Conn.PrivateData = append([]byte(nil), p[8:8+n]...)
	}
	return ev, nil
}

// Err describes an error event as one line, or is nil for a success.
func (e Event) Err() error {
	switch e.Type {
	case EventAddrResolved, EventRouteResolved, EventConnectRequest, EventConnectResponse, EventEstablished:
		if e.Status == 0 {
			return nil
		}
	}
	return &EventError{Event: e.Type, Status: e.Status}
}

// EventError is an event that ends a connection attempt.
type EventError struct {
	Event  EventType
	Status int32
}

func (e *EventError) Error() string {
	switch {
	case e.Event == EventRejected && e.Status == rejInvalidServiceID:
		return "connection refused: nothing listens on that port (REJECTED, invalid service id)"
	case e.Event == EventRejected && e.Status == rejConsumerDefined:
		return "connection refused by the peer (REJECTED by the application)"
	case e.Event == EventRejected:
		return fmt.Sprintf("connection rejected (REJECTED, reason %d)", e.Status)
	case e.Status < 0:
		return fmt.Sprintf("%s: %v", e.Event, syscall.Errno(-e.Status))
	case e.Status > 0:
		return fmt.Sprintf("%s (status %d)", e.Event, e.Status)
	}
	return e.Event.String()
}

// Refused reports whether the peer's CM refused the connection (REJECTED).
func (e *EventError) Refused() bool { return e.Event == EventRejected }

// IB CM reject reasons (enum ib_cm_rej_reason) that have their own words.
const (
	rejInvalidServiceID = 8
	rejConsumerDefined  = 28
)
