package main

import (
	"strconv"
	"strings"
)

// ParseDevPort splits "DEV" or "DEV/PORT" (port 0 = all ports); "" is
// every device. A bad port is a usage error.
func ParseDevPort(arg string) (dev string, port uint32, err error) {
	if arg == "" {
		return "", 0, nil
	}
	dev, p, hasPort := strings.Cut(arg, "/")
	if dev == "" {
		return "", 0, UsageErrorf("%q: want DEV or DEV/PORT, as in rxe0 or rxe0/1", arg)
	}
	if hasPort {
		n, perr := strconv.ParseUint(p, 10, 32)
		if perr != nil || n == 0 {
			return "", 0, UsageErrorf("%q: the port must be a number from 1, as in rxe0/1", arg)
		}
		port = uint32(n)
	}
	return dev, port, nil
}
