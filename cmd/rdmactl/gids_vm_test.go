//go:build vmtest

package main

import (
	"encoding/json"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// vmRun runs a reference tool in the VM and fails the test if it is missing
// or fails.
func vmRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v (the VM must provide it)", name, args, err)
	}
	return string(out)
}

// gidKey identifies one GID entry across tools.
type gidKey struct {
	dev   string
	port  uint32
	index uint32
}

// TestVMGIDsMatchIbvDevinfo compares rdmactl -j gids with the GID lines of
// ibv_devinfo -v ("GID[  1]:  ::ffff:10.77.0.1, RoCE v2"), which libibverbs
// gets from the QUERY_GID_TABLE ioctl, not from sysfs.
func TestVMGIDsMatchIbvDevinfo(t *testing.T) {
	ours := gidsJSON(t, "-j", "gids")
	if len(ours) == 0 {
		t.Fatal("rdmactl gids found no GID in the VM")
	}
	theirs := map[gidKey][2]string{}
	var dev string
	var port uint32
	hca := regexp.MustCompile(`^hca_id:\s+(\S+)`)
	portRE := regexp.MustCompile(`^\s+port:\s+(\d+)`)
	gidRE := regexp.MustCompile(`^\s+GID\[\s*(\d+)\]:\s+([0-9a-fA-F:.]+), (.+)$`)
	for _, line := range strings.Split(vmRun(t, "ibv_devinfo", "-v"), "\n") {
		if m := hca.FindStringSubmatch(line); m != nil {
			dev = m[1]
		} else if m := portRE.FindStringSubmatch(line); m != nil {
			p, _ := strconv.Atoi(m[1])
			port = uint32(p)
		} else if m := gidRE.FindStringSubmatch(line); m != nil {
			i, _ := strconv.Atoi(m[1])
			theirs[gidKey{dev, port, uint32(i)}] = [2]string{m[2], m[3]}
		}
	}
	if len(theirs) != len(ours) {
		t.Errorf("ibv_devinfo -v shows %d GIDs, rdmactl %d", len(theirs), len(ours))
	}
	for _, r := range ours {
		k := gidKey{r.Ifname, r.Port, r.Index}
		th, ok := theirs[k]
		if !ok {
			t.Errorf("%v: rdmactl shows %s, ibv_devinfo nothing", k, r.GID)
			continue
		}
		a, err := netip.ParseAddr(th[0])
		if err != nil {
			t.Fatalf("ibv_devinfo GID %q: %v", th[0], err)
		}
		raw := a.As16()
		want := strings.Join(hexGroups(raw[:]), ":")
		if r.GID != want {
			t.Errorf("%v: rdmactl GID %s, ibv_devinfo %s (%s)", k, r.GID, th[0], want)
		}
		// ibv_devinfo prints "RoCE v2", "RoCE v1" or "IB" (for IB/RoCE v1 on IB).
		if s(r.Type) != th[1] {
			t.Errorf("%v: rdmactl type %s, ibv_devinfo %s", k, s(r.Type), th[1])
		}
		if v4 := a.Unmap(); v4.Is4() && s(r.IPv4) != v4.String() {
			t.Errorf("%v: ipv4 %s, want %s", k, s(r.IPv4), v4)
		}
	}
	t.Logf("%d GIDs agree with ibv_devinfo -v", len(ours))
}

func hexGroups(b []byte) []string {
	var g []string
	for i := 0; i < len(b); i += 2 {
		g = append(g, strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
		for len(g[len(g)-1]) < 4 {
			g[len(g)-1] = "0" + g[len(g)-1]
		}
	}
	return g
}

// TestVMGIDsMatchSysfs is the show_gids equivalent: walk
// /sys/class/infiniband/*/ports/*/gids/* directly, skip all-zero GIDs, read
// gid_attrs/types and ndevs, and compare with rdmactl -j gids; --all must
// list every slot (gid_tbl_len of them).
func TestVMGIDsMatchSysfs(t *testing.T) {
	ours := map[gidKey]gidJSON{}
	for _, r := range gidsJSON(t, "-j", "gids") {
		ours[gidKey{r.Ifname, r.Port, r.Index}] = r
	}
	files, _ := filepath.Glob("/sys/class/infiniband/*/ports/*/gids/*")
	if len(files) == 0 {
		t.Fatal("no GID files in /sys: the VM must have rxe devices")
	}
	populated := 0
	for _, f := range files {
		parts := strings.Split(f, "/")
		dev, portS, idxS := parts[4], parts[6], parts[8]
		p, _ := strconv.Atoi(portS)
		i, _ := strconv.Atoi(idxS)
		k := gidKey{dev, uint32(p), uint32(i)}
		gid, typ, nd, err := sysfsGID(filepath.Dir(filepath.Dir(f)), idxS)
		if err != nil {
			t.Fatal(err)
		}
		if gid == "" {
			if _, ok := ours[k]; ok {
				t.Errorf("%v: empty slot shown without --all", k)
			}
			continue
		}
		populated++
		r, ok := ours[k]
		if !ok {
			t.Errorf("%v: sysfs has %s, rdmactl nothing", k, gid)
			continue
		}
		if r.GID != gid || s(r.SysfsType) != typ || s(r.Netdev) != nd {
			t.Errorf("%v: rdmactl %s/%s/%s, sysfs %s/%s/%s", k, r.GID, s(r.SysfsType), s(r.Netdev), gid, typ, nd)
		}
	}
	if populated != len(ours) {
		t.Errorf("sysfs has %d populated GIDs, rdmactl shows %d", populated, len(ours))
	}
	all := gidsJSON(t, "-j", "gids", "--all")
	if len(all) != len(files) {
		t.Errorf("--all shows %d slots, sysfs has %d", len(all), len(files))
	}
	// The recipe from the help: RoCE v2 + IPv4 on vrxe1 is index 1 (rdmavm README).
	best := gidsJSON(t, "-j", "gids", "--netdev", "vrxe1", "--type", "v2", "--ipv4")
	if len(best) != 1 || best[0].Ifname != "rxe1" || best[0].Index != 1 || s(best[0].IPv4) != "10.77.0.2" {
		t.Errorf("--netdev vrxe1 --type v2 --ipv4: %+v", best)
	}
	t.Logf("%d populated GIDs of %d slots agree with sysfs", populated, len(files))
}

// TestVMGIDsUnknownDevice: the error names the live devices.
func TestVMGIDsUnknownDevice(t *testing.T) {
	_, stderr, code := runCmd(t, "gids", "mlx5_9")
	if code != cmdutil.ExitNotFound || !strings.Contains(stderr, "rxe0") || !strings.Contains(stderr, "mlx5_9") {
		t.Fatalf("code %d stderr %q", code, stderr)
	}
	var v any
	out, _, _ := runCmd(t, "-j", "gids", "rxe0/1")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
}

// TestVMGIDsBestMatchesPerftest runs ib_write_bw without -x and checks that
// the "GID index" perftest chose on each side is what gids --best says.
func TestVMGIDsBestMatchesPerftest(t *testing.T) {
	// The GID index is in perftest's header, printed before the run: a
	// side that then gives up on its clock calibration under TCG
	// (perftestClockFailed) still said which GID it chose. A client that
	// gives up does so before its closing handshake, which the server
	// then fails.
	srv := exec.Command("ib_write_bw", "-d", "rxe0", "-n", "5", "-s", "64", "-p", "18779")
	var srvOut, srvErr strings.Builder
	srv.Stdout, srv.Stderr = &srvOut, &srvErr
	if err := srv.Start(); err != nil {
		t.Fatalf("ib_write_bw server: %v", err)
	}
	defer srv.Process.Kill()
	srvWait := serverListens(t, srv, 18779, func() string { return srvOut.String() + srvErr.String() })
	var cliErr strings.Builder
	c := exec.Command("ib_write_bw", "-d", "rxe1", "-n", "5", "-s", "64", "-p", "18779", "127.0.0.1")
	c.Stderr = &cliErr
	cli, err := c.Output()
	if err != nil && !perftestClockFailed(cliErr.String()) {
		t.Fatalf("ib_write_bw client: %v\n%s%s", err, cli, cliErr.String())
	}
	if err := srvWait(); err != nil && !perftestClockFailed(srvErr.String()+cliErr.String()) {
		t.Fatalf("ib_write_bw server: %v\n%s%s", err, srvOut.String(), srvErr.String())
	}
	re := regexp.MustCompile(`GID index\s*:\s*(\d+)`)
	for dev, out := range map[string]string{"rxe0": srvOut.String(), "rxe1": string(cli)} {
		m := re.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no GID index in perftest output:\n%s", dev, out)
		}
		best := gidsJSON(t, "-j", "gids", dev+"/1", "--best")
		if len(best) != 1 || strconv.Itoa(int(best[0].Index)) != m[1] {
			t.Errorf("%s: gids --best %+v, perftest chose GID index %s", dev, best, m[1])
		}
	}
}

// TestVMGIDsVLAN: a VLAN on rxe1's netdev gets GIDs of its own (the
// kernel's RoCE GID cache follows upper devices); rdmactl names their
// netdev as sysfs's gid_attrs/ndevs does, not as the port's netdev.
func TestVMGIDsVLAN(t *testing.T) {
	const vlan = "vrxe1.77"
	sh(t, "ip", "link", "add", "link", "vrxe1", "name", vlan, "type", "vlan", "id", "77")
	t.Cleanup(func() {
		quiet(t, "ip", "link", "del", vlan)
		waitVLANGIDs(t, vlan, false) // leave the table as the other tests know it
	})
	sh(t, "ip", "addr", "add", "10.78.0.2/24", "dev", vlan)
	sh(t, "ip", "link", "set", vlan, "up")
	// The VLAN's GIDs (IPv4, IPv6 link-local) may arrive one after the
	// other: compare with a table that did not change around the run.
	var sysfs map[uint32]string
	ours := map[uint32]gidJSON{}
	if !vmcheck.Until(30*time.Second, nil, func() bool {
		sysfs = waitVLANGIDs(t, vlan, true)
		clear(ours)
		for _, r := range gidsJSON(t, "-j", "gids", "rxe1/1") {
			ours[r.Index] = r
		}
		return maps.Equal(waitVLANGIDs(t, vlan, true), sysfs)
	}) {
		t.Fatalf("rxe1/1's GID table still changing around every gids run for 30 s")
	}
	vlanGIDs := 0
	for idx, nd := range sysfs {
		r, ok := ours[idx]
		if !ok {
			t.Errorf("rxe1/1 GID %d (%s): sysfs has it, rdmactl not", idx, nd)
			continue
		}
		if s(r.Netdev) != nd {
			t.Errorf("rxe1/1 GID %d: rdmactl netdev %s, sysfs %s", idx, s(r.Netdev), nd)
		}
		if nd == vlan {
			vlanGIDs++
			if r.IPv4 != nil && *r.IPv4 != "10.78.0.2" {
				t.Errorf("rxe1/1 GID %d on %s: ipv4 %s, want 10.78.0.2", idx, vlan, *r.IPv4)
			}
		}
	}
	if len(ours) != len(sysfs) {
		t.Errorf("rdmactl shows %d GIDs of rxe1/1, sysfs %d", len(ours), len(sysfs))
	}
	if vlanGIDs == 0 {
		t.Errorf("no GID of rxe1/1 on %s in sysfs", vlan)
	}
	if !t.Failed() {
		t.Logf("%d GIDs of rxe1/1, %d on %s, agree with sysfs", len(sysfs), vlanGIDs, vlan)
	}
}

// waitVLANGIDs waits (10 s at most: the GID cache is updated from a
// workqueue) until rxe1/1 has GIDs on netdev vlan, or has none with
// present false, and returns the populated slots' netdevs by index.
func waitVLANGIDs(t *testing.T, vlan string, present bool) map[uint32]string {
	t.Helper()
	dir := "/sys/class/infiniband/rxe1/ports/1"
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		got := map[uint32]string{}
		on := 0
		files, _ := filepath.Glob(dir + "/gids/*")
		for _, f := range files {
			gid, _, nd, err := sysfsGID(dir, filepath.Base(f))
			if err != nil || gid == "" {
				continue
			}
			i, _ := strconv.Atoi(filepath.Base(f))
			got[uint32(i)] = nd
			if nd == vlan {
				on++
			}
		}
		if (on > 0) == present {
			return got
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("rxe1/1: %d GIDs on %s after 10 s, want them present=%v", on, vlan, present)
		}
	}
}

// sysfsGID reads GID slot idx of the port directory dir
// (/sys/class/infiniband/DEV/ports/PORT) as the kernel shows it: the GID,
// "" for an empty slot, and for a populated one its gid_attrs type and
// netdev.
func sysfsGID(dir, idx string) (gid, typ, netdev string, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "gids", idx))
	if err != nil {
		return "", "", "", err
	}
	gid = strings.TrimSpace(string(b))
	if gid == "0000:0000:0000:0000:0000:0000:0000:0000" {
		return "", "", "", nil
	}
	t, _ := os.ReadFile(filepath.Join(dir, "gid_attrs/types", idx))
	n, _ := os.ReadFile(filepath.Join(dir, "gid_attrs/ndevs", idx))
	return gid, strings.TrimSpace(string(t)), strings.TrimSpace(string(n)), nil
}
