//go:build vmtest

package sysfs

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func tool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v (the VM must provide it)", name, args, err)
	}
	return string(out)
}

// ibvPorts parses ibv_devinfo -v into dev -> "port/key" or "key" -> value.
func ibvDevinfo(t *testing.T) map[string]map[string]string {
	m := map[string]map[string]string{}
	var dev, port string
	kv := regexp.MustCompile(`^\t+([a-z_]+):\s+(.*)$`)
	for _, line := range strings.Split(tool(t, "ibv_devinfo", "-v"), "\n") {
		if v, ok := strings.CutPrefix(line, "hca_id:\t"); ok {
			dev, port = v, ""
			m[dev] = map[string]string{}
			continue
		}
		mm := kv.FindStringSubmatch(line)
		if mm == nil || dev == "" {
			continue
		}
		if mm[1] == "port" {
			port = mm[2]
			continue
		}
		k := mm[1]
		if port != "" {
			k = port + "/" + k
		}
		m[dev][k] = strings.TrimSpace(mm[2])
	}
	return m
}

// TestVMDeviceAndPortMatchReferenceTools compares Device and Port read
// from the live /sys with rdma -j dev/link show, ibv_devinfo -v, the
// /dev/infiniband char devices and ip -j link.
func TestVMDeviceAndPortMatchReferenceTools(t *testing.T) {
	f := New("")
	names, err := f.Devices()
	if err != nil || len(names) < 2 {
		t.Fatalf("Devices() = %v, %v; the VM has rxe0 and rxe1", names, err)
	}
	var devs []map[string]any
	if err := json.Unmarshal([]byte(tool(t, "rdma", "-j", "dev", "show")), &devs); err != nil {
		t.Fatal(err)
	}
	if len(devs) != len(names) {
		t.Errorf("rdma dev show has %d devices, sysfs %d", len(devs), len(names))
	}
	ibv := ibvDevinfo(t)
	for _, rd := range devs {
		name := rd["ifname"].(string)
		d, err := f.Device(name)
		if err != nil {
			t.Fatalf("Device(%s): %v", name, err)
		}
		if d.NodeGUID != rd["node_guid"] || d.SysImageGUID != rd["sys_image_guid"] {
			t.Errorf("%s: guids %s %s, rdma %v %v", name, d.NodeGUID, d.SysImageGUID, rd["node_guid"], rd["sys_image_guid"])
		}
		if strings.ToLower(d.NodeType) != rd["node_type"] {
			t.Errorf("%s: node type %q, rdma %v", name, d.NodeType, rd["node_type"])
		}
		iv := ibv[name]
		if iv["node_guid"] != d.NodeGUID || iv["phys_port_cnt"] != strconv.Itoa(len(d.Ports)) {
			t.Errorf("%s: ibv_devinfo node_guid %s ports %s; sysfs %s %d", name, iv["node_guid"], iv["phys_port_cnt"], d.NodeGUID, len(d.Ports))
		}
		if d.Driver != "rdma_rxe" || d.PCIAddr != "" || d.Parent == "" {
			t.Errorf("%s: driver %q pci %q parent %q", name, d.Driver, d.PCIAddr, d.Parent)
		}
		// The uverbs char device must be the node /dev/infiniband/uverbsN.
		var st unix.Stat_t
		if err := unix.Stat(d.UverbsPath(), &st); err != nil {
			t.Errorf("%s: %s: %v", name, d.UverbsPath(), err)
		} else if d.UverbsMajor == nil || unix.Major(st.Rdev) != *d.UverbsMajor || unix.Minor(st.Rdev) != *d.UverbsMinor {
			t.Errorf("%s: %s is %d:%d, sysfs says %v:%v", name, d.UverbsPath(), unix.Major(st.Rdev), unix.Minor(st.Rdev), d.UverbsMajor, d.UverbsMinor)
		}
		if d.UverbsABI == nil || *d.UverbsABI != 2 {
			t.Errorf("%s: rxe uverbs ABI %v, want 2", name, d.UverbsABI)
		}
		for _, pn := range d.Ports {
			p, err := f.Port(name, pn)
			if err != nil {
				t.Fatal(err)
			}
			k := strconv.Itoa(int(pn)) + "/"
			checks := map[string][2]string{
				"state":       {"PORT_" + p.State + " (" + strconv.Itoa(int(*p.StateNum)) + ")", iv[k+"state"]},
				"link_layer":  {p.LinkLayer, iv[k+"link_layer"]},
				"gid_tbl_len": {strconv.Itoa(p.GIDTableLen), iv[k+"gid_tbl_len"]},
				"sm_lid":      {strconv.Itoa(int(*p.SMLID)), iv[k+"sm_lid"]},
				"port_lid":    {strconv.Itoa(int(*p.LID)), iv[k+"port_lid"]},
				"sm_sl":       {strconv.Itoa(int(*p.SMSL)), iv[k+"sm_sl"]},
				"cap_mask":    {"0x" + strconv.FormatUint(uint64(*p.CapMask)|1<<32, 16)[1:], iv[k+"port_cap_flags"]},
				"width":       {p.Width, strings.Fields(iv[k+"active_width"])[0]},
				"phys_state":  {strconv.Itoa(int(*p.PhysStateNum)), strings.Trim(strings.Fields(iv[k+"phys_state"])[1], "()")},
			}
			for what, c := range checks {
				if c[0] != c[1] {
					t.Errorf("%s/%d %s: sysfs %q, ibv_devinfo %q", name, pn, what, c[0], c[1])
				}
			}
			if p.RateGbps == nil || *p.RateGbps <= 0 {
				t.Errorf("%s/%d: rate %q not parsed", name, pn, p.Rate)
			}
			// Netdev of the GIDs and its MTU against ip -j link.
			gids, err := f.GIDs(name, pn)
			if err != nil || len(gids) == 0 || gids[0].Netdev == "" {
				t.Fatalf("GIDs(%s/%d): %v %v", name, pn, gids, err)
			}
			nd := f.Netdev(gids[0].Netdev)
			var links []map[string]any
			if err := json.Unmarshal([]byte(tool(t, "ip", "-j", "link", "show", "dev", nd.Name)), &links); err != nil || len(links) != 1 {
				t.Fatalf("ip -j link show dev %s: %v", nd.Name, err)
			}
			if nd.MTU == nil || float64(*nd.MTU) != links[0]["mtu"] || nd.Ifindex == nil || float64(*nd.Ifindex) != links[0]["ifindex"] {
				t.Errorf("%s: mtu %v ifindex %v, ip says %v %v", nd.Name, nd.MTU, nd.Ifindex, links[0]["mtu"], links[0]["ifindex"])
			}
			if nd.Name != d.Parent {
				t.Errorf("%s: GID netdev %s, parent %s", name, nd.Name, d.Parent)
			}
		}
	}
	if _, err := os.Stat("/sys/class/infiniband"); err != nil {
		t.Fatal(err)
	}
}

// TestVMLinkMatchesRdma compares port state with rdma -j link show.
func TestVMLinkMatchesRdma(t *testing.T) {
	var links []map[string]any
	if err := json.Unmarshal([]byte(tool(t, "rdma", "-j", "link", "show")), &links); err != nil {
		t.Fatal(err)
	}
	f := New("")
	for _, l := range links {
		p, err := f.Port(l["ifname"].(string), uint32(l["port"].(float64)))
		if err != nil {
			t.Fatal(err)
		}
		// rdma prints phys state "LINK_UP" for sysfs "LinkUp".
		phys := strings.ToUpper(strings.ReplaceAll(p.PhysState, "Link", "Link_"))
		if p.State != l["state"] || phys != l["physical_state"] {
			t.Errorf("%v: sysfs %s/%s, rdma %v/%v", l["ifname"], p.State, p.PhysState, l["state"], l["physical_state"])
		}
	}
}
