// Package nldevtest answers requests as the kernel's netlink core does,
// for fake RDMA netlink kernels built on mdlayher/netlink's nltest: the
// framing of answers, dumps, acknowledgements and errors, so that each
// fake only decides what to answer.
package nldevtest

import (
	"encoding/binary"
	"syscall"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
)

// Error is the NLMSG_ERROR the kernel sends for a refused request, or with
// errno 0 its acknowledgement: the negative errno, then the request's own
// header and payload (netlink_ack, net/netlink/af_netlink.c).
func Error(en syscall.Errno, req netlink.Message) netlink.Message {
	b := binary.NativeEndian.AppendUint32(nil, uint32(-int32(en)))
	b = binary.NativeEndian.AppendUint32(b, uint32(16+len(req.Data)))
	b = binary.NativeEndian.AppendUint16(b, uint16(req.Header.Type))
	b = binary.NativeEndian.AppendUint16(b, uint16(req.Header.Flags))
	b = binary.NativeEndian.AppendUint32(b, req.Header.Sequence)
	b = binary.NativeEndian.AppendUint32(b, req.Header.PID)
	b = append(b, req.Data...)
	return netlink.Message{Header: netlink.Header{Type: netlink.Error, Sequence: req.Header.Sequence, PID: req.Header.PID}, Data: b}
}

// Refuse answers req with errno en alone, as nltest.Func returns it.
func Refuse(en syscall.Errno, req netlink.Message) ([]netlink.Message, error) {
	return []netlink.Message{Error(en, req)}, nil
}

// Reply answers req with msgs (their type and data; a zero type is req's
// own) as the kernel frames them: each with req's sequence number and port
// id; a dump's answers are one multipart message ending in NLMSG_DONE
// (netlink_dump_done); any other request that asked for an acknowledgement
// gets one after its answers (netlink_rcv_skb).
func Reply(req netlink.Message, msgs ...netlink.Message) ([]netlink.Message, error) {
	out := make([]netlink.Message, 0, len(msgs)+1)
	for _, m := range msgs {
		if m.Header.Type == 0 {
			m.Header.Type = req.Header.Type
		}
		m.Header.Sequence, m.Header.PID = req.Header.Sequence, req.Header.PID
		out = append(out, m)
	}
	if req.Header.Flags&netlink.Dump != 0 {
		out = append(out, netlink.Message{Header: netlink.Header{Type: netlink.Done, Sequence: req.Header.Sequence, PID: req.Header.PID}, Data: make([]byte, 4)})
		return nltest.Multipart(out)
	}
	if req.Header.Flags&netlink.Acknowledge != 0 {
		out = append(out, Error(0, req))
	}
	return out, nil
}
