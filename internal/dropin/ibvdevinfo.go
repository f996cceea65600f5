package dropin

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// queryAll is every verbs device's answer, in libibverbs' list order
// (by name here; the kernel numbers them in that order as created).
func queryAll(env Env) ([]render.DevInfo, error) {
	src, err := env.Open()
	if err != nil {
		return nil, err
	}
	defer src.Close()
	qs, err := src.Query("", 0)
	if errors.Is(err, inventory.ErrNoVerbsDevice) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return render.DevInfos(qs), nil
}

// ibvDevices prints the devices and their node GUIDs as ibv_devices
// (rdma-core libibverbs/examples/device_list.c): two header lines, then
// "    %-16s\t%016llx" a device. It takes no options and ignores its
// arguments.
func ibvDevices(env Env, argv []string) int {
	devs, err := queryAll(env)
	if err != nil {
		// perror("Failed to get IB devices list")
		fmt.Fprintf(env.Stderr, "Failed to get IB devices list: %v\n", err)
		return 1
	}
	w := bufio.NewWriter(env.Stdout)
	fmt.Fprintf(w, "    %-16s\t   node GUID\n", "device")
	fmt.Fprintf(w, "    %-16s\t----------------\n", "------")
	for _, d := range devs {
		fmt.Fprintf(w, "    %-16s\t%s\n", d.Ifname, strings.ReplaceAll(d.NodeGUID, ":", ""))
	}
	w.Flush()
	return 0
}

var ibvDevinfoOptions = []Option{
	{Short: 'd', Long: "ib-dev", HasArg: true},
	{Short: 'i', Long: "ib-port", HasArg: true},
	{Short: 'l', Long: "list"},
	{Short: 'v', Long: "verbose"},
}

func ibvDevinfoUsage(env Env, argv0 string) {
	fmt.Fprintf(env.Stdout, "Usage: %s             print the ca attributes\n", argv0)
	fmt.Fprintf(env.Stdout, "\n")
	fmt.Fprintf(env.Stdout, "Options:\n")
	fmt.Fprintf(env.Stdout, "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n")
	fmt.Fprintf(env.Stdout, "  -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n")
	fmt.Fprintf(env.Stdout, "  -l, --list             print only the IB devices names\n")
	fmt.Fprintf(env.Stdout, "  -v, --verbose          print all the attributes of the IB device(s)\n")
}

// ibvDevinfo is ibv_devinfo (rdma-core libibverbs/examples/devinfo.c):
// every device's attributes and its ports' (-d one device, -i one port,
// -v all attributes), -l the names only. Its exit statuses: 0; 1 for a
// bad -i; 255 (-1) for a bad option, no device or an unknown -d; 4 for a
// port the device lacks.
func ibvDevinfo(env Env, argv []string) int {
	opts, _, err := getoptLong(argv[1:], ibvDevinfoOptions)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", argv[0], err)
		ibvDevinfoUsage(env, argv[0])
		return 255
	}
	dev, port, verbose := "", int64(0), false
	for _, o := range opts {
		switch o.Name {
		case "d":
			dev = o.Arg
		case "i":
			port = strtol(o.Arg)
			if port <= 0 {
				ibvDevinfoUsage(env, argv[0])
				return 1
			}
		case "v":
			verbose = true
		case "l":
			// devinfo.c lists and returns as soon as it meets -l.
			devs, err := queryAll(env)
			if err != nil {
				fmt.Fprintf(env.Stderr, "Failed to get IB devices list: %v\n", err)
				return 255
			}
			w := bufio.NewWriter(env.Stdout)
			s := "s"
			if len(devs) == 1 {
				s = ""
			}
			fmt.Fprintf(w, "%d HCA%s found:\n", len(devs), s)
			for _, d := range devs {
				fmt.Fprintf(w, "\t%s\n", d.Ifname)
			}
			fmt.Fprintf(w, "\n")
			w.Flush()
			return 0
		}
	}
	devs, err := queryAll(env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "Failed to get IB devices list: %v\n", err)
		return 255
	}
	if dev != "" {
		var one []render.DevInfo
		for _, d := range devs {
			if d.Ifname == dev {
				one = append(one, d)
				break
			}
		}
		if one == nil {
			fmt.Fprintf(env.Stderr, "IB device '%s' wasn't found\n", dev)
			return 255
		}
		devs = one
	} else if len(devs) == 0 {
		fmt.Fprintf(env.Stderr, "No IB devices found\n")
		return 255
	}
	w := bufio.NewWriter(env.Stdout)
	defer w.Flush()
	rc := 0
	for i := range devs {
		// print_hca_cap takes the port as a uint8_t.
		rc |= printHCACap(w, env, &devs[i], uint8(port), verbose)
	}
	return rc
}

// printHCACap is devinfo.c's print_hca_cap; verbose is -v.
func printHCACap(w *bufio.Writer, env Env, d *render.DevInfo, port uint8, verbose bool) int {
	if port > d.PhysPortCnt {
		w.Flush()
		fmt.Fprintf(env.Stderr, "Invalid port requested for device\n")
		return 4
	}
	fmt.Fprintf(w, "hca_id:\t%s\n", d.Ifname)
	fmt.Fprintf(w, "\ttransport:\t\t\t%s (%d)\n", d.TransportName, d.Transport)
	if d.FWVer != "" {
		fmt.Fprintf(w, "\tfw_ver:\t\t\t\t%s\n", d.FWVer)
	}
	fmt.Fprintf(w, "\tnode_guid:\t\t\t%s\n", d.NodeGUID)
	fmt.Fprintf(w, "\tsys_image_guid:\t\t\t%s\n", d.SysImageGUID)
	fmt.Fprintf(w, "\tvendor_id:\t\t\t0x%04x\n", d.VendorID)
	fmt.Fprintf(w, "\tvendor_part_id:\t\t\t%d\n", d.VendorPartID)
	fmt.Fprintf(w, "\thw_ver:\t\t\t\t0x%X\n", d.HWVer)
	if d.BoardID != nil && *d.BoardID != "" {
		fmt.Fprintf(w, "\tboard_id:\t\t\t%s\n", *d.BoardID)
	}
	fmt.Fprintf(w, "\tphys_port_cnt:\t\t\t%d\n", d.PhysPortCnt)
	if verbose {
		printDevVerbose(w, d)
	}
	for i, p := range d.Ports {
		if port != 0 && p.Port != port {
			continue
		}
		fmt.Fprintf(w, "\t\tport:\t%d\n", p.Port)
		fmt.Fprintf(w, "\t\t\tstate:\t\t\t%s (%d)\n", p.StateName, p.State)
		fmt.Fprintf(w, "\t\t\tmax_mtu:\t\t%s (%d)\n", p.MaxMTUName, p.MaxMTU)
		fmt.Fprintf(w, "\t\t\tactive_mtu:\t\t%s (%d)\n", p.ActiveMTUName, p.ActiveMTU)
		fmt.Fprintf(w, "\t\t\tsm_lid:\t\t\t%d\n", p.SMLID)
		fmt.Fprintf(w, "\t\t\tport_lid:\t\t%d\n", p.PortLID)
		fmt.Fprintf(w, "\t\t\tport_lmc:\t\t0x%02x\n", p.PortLMC)
		fmt.Fprintf(w, "\t\t\tlink_layer:\t\t%s\n", p.LinkLayerName)
		if verbose {
			printPortVerbose(w, d, &d.Ports[i])
		}
		fmt.Fprintf(w, "\n")
	}
	return 0
}

// strtol is C's strtol(s, NULL, 0) for an int: leading blanks, a sign, a
// 0x or 0 prefix for hex or octal, digits up to the first that is not
// one; 0 when there are none.
func strtol(s string) int64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := int64(10)
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") && hexDigit(s[2]) >= 0:
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base = 8
	}
	var v int64
	for i := 0; i < len(s); i++ {
		d := hexDigit(s[i])
		if d < 0 || int64(d) >= base {
			break
		}
		if v > (1<<62)/base {
			break // far past any port number
		}
		v = v*base + int64(d)
	}
	if neg {
		v = -v
	}
	return v
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
