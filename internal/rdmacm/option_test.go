package rdmacm

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestOptionConstants checks SET_OPTION's command, level and names
// against <rdma/rdma_user_cm.h> (enums, which layout.c cannot print as
// sizes).
func TestOptionConstants(t *testing.T) {
	h, err := os.ReadFile("/usr/include/rdma/rdma_user_cm.h")
	if err != nil {
		t.Fatalf("the UAPI headers are needed (Debian: linux-libc-dev): %v", err)
	}
	for name, want := range map[string]int{
		"RDMA_OPTION_ID":             optLevelID,
		"RDMA_OPTION_ID_TOS":         optIDTOS,
		"RDMA_OPTION_ID_ACK_TIMEOUT": optIDAckTimeout,
	} {
		m := regexp.MustCompile(`(?m)^\s*` + name + `\s*=\s*(\d+)`).FindSubmatch(h)
		if m == nil {
			t.Errorf("%s not found in rdma_user_cm.h", name)
			continue
		}
		if got, _ := strconv.Atoi(string(m[1])); got != want {
			t.Errorf("%s = %d in the header, %d here", name, got, want)
		}
	}
	// RDMA_USER_CM_CMD_SET_OPTION: the enum counts from CREATE_ID 0.
	body := regexp.MustCompile(`(?s)enum\s*\{\s*(RDMA_USER_CM_CMD_CREATE_ID.*?)\}`).FindSubmatch(h)
	if body == nil {
		t.Fatal("command enum not found")
	}
	cmds := regexp.MustCompile(`RDMA_USER_CM_CMD_(\w+)`).FindAllSubmatch(body[1], -1)
	found := false
	for i, c := range cmds {
		if string(c[1]) == "SET_OPTION" {
			found = true
			if i != cmdSetOption {
				t.Errorf("SET_OPTION is command %d in the header, %d here", i, cmdSetOption)
			}
		}
	}
	if !found {
		t.Error("RDMA_USER_CM_CMD_SET_OPTION not found in the command enum")
	}
}
