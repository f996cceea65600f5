package main

import (
	"time"

	"github.com/rdmactl/rdmactl/internal/top"
)

// The JSON the tests read, declared here apart from the commands' own
// types, so that a key renamed in a command fails a test instead of
// changing both sides at once. The keys are part of the interface
// (README "JSON output").

// gidJSON is one row of rdmactl -j gids.
type gidJSON struct {
	Ifname    string  `json:"ifname"`
	Port      uint32  `json:"port"`
	Index     uint32  `json:"index"`
	GID       string  `json:"gid"`
	Type      *string `json:"type"`
	SysfsType *string `json:"sysfs_type"`
	Netdev    *string `json:"netdev"`
	IPv4      *string `json:"ipv4"`
	IPv6      *string `json:"ipv6"`
}

// counterJSON is one row of rdmactl -j counters.
type counterJSON struct {
	Ifname   string  `json:"ifname"`
	Port     uint32  `json:"port"`
	Source   string  `json:"source"`
	Name     string  `json:"name"`
	Value    uint64  `json:"value"`
	Unit     string  `json:"unit"`
	Category string  `json:"category"`
	Raw      *uint64 `json:"raw,omitempty"`
}

// counterRateJSON is one row of rdmactl -j counters --watch.
type counterRateJSON struct {
	counterJSON
	Delta     uint64  `json:"delta"`
	Rate      float64 `json:"rate"`
	IntervalS float64 `json:"interval_s"`
	Wrapped   bool    `json:"wrapped,omitempty"`
	Reset     bool    `json:"reset,omitempty"`
	Saturated bool    `json:"saturated,omitempty"`
}

// The counters' sources, as counters' "source" key and --source name them.
const (
	srcCounters   = "counters"
	srcHWCounters = "hw_counters"
	srcNetlink    = "netlink"
)

// topJSON is one snapshot of rdmactl -j top.
type topJSON struct {
	Time           time.Time  `json:"time"`
	IntervalS      float64    `json:"interval_s"`
	Ports          []top.Row  `json:"ports"`
	Processes      []top.Proc `json:"processes"`
	Events         []string   `json:"events"`
	ProcessesError string     `json:"processes_error,omitempty"`
}
