package scripts

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/rdmactl/rdmactl/internal/dropin"
)

// TestPackageLinks: the packages ship a link under /usr/lib/rdmactl/bin
// for each name rdmactl answers to (internal/dropin), each to
// /usr/bin/rdmactl, and no other: packaging/nfpm.yaml lists them by hand.
func TestPackageLinks(t *testing.T) {
	b, err := os.ReadFile("../packaging/nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^  - src: (\S+)\n    dst: /usr/lib/rdmactl/bin/(\S+)\n    type: symlink$`)
	var names []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		if m[1] != "../../../bin/rdmactl" {
			t.Errorf("%s links to %s, want ../../../bin/rdmactl (/usr/bin/rdmactl)", m[2], m[1])
		}
		names = append(names, m[2])
	}
	slices.Sort(names)
	if want := dropin.Names(); !slices.Equal(names, want) {
		t.Errorf("packaging/nfpm.yaml links %v, the names rdmactl answers to %v", names, want)
	}
}
