package perf

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// perftest's options that rdmactl perf does not implement: each is
// recognised by its perftest name (long_options[] in perftest's
// src/perftest_parameters.c, 6.29) with perftest's argument kind, so that
// it is refused in one line saying why, with its own exit code, instead
// of pflag's "unknown flag" (and so that an option's argument is never
// taken for the server's address). The refusal happens while parsing the
// command line, before any device is opened. docs/perftest-options.md
// lists every option; TestPerftestOptionsDoc keeps it and this table in
// step.

// refusal is one refused perftest option.
type refusal struct {
	long  string
	short string // perftest's letter, "" when it has none (or rdmactl uses it)
	arg   bool   // perftest's has_arg
	code  int    // cmdutil.ExitUsage or cmdutil.ExitUnsupported
	why   string
}

// The reasons, by kind.
const (
	whyRawEth = "a raw Ethernet option (perftest's raw_ethernet_* tests); rdmactl perf has no raw Ethernet test"
)

// accel is the reason for an accelerator-memory option: rdmactl is one
// static binary that links no accelerator runtime, on any machine.
func accel(what string) string {
	return what + " needs a perftest built with that accelerator's runtime; rdmactl perf registers host memory only"
}

// vendor is the reason for an option of a vendor's direct-verbs
// extension: the driver path rdmactl uses (the kernel's uverbs ABI with
// rxe and mlx5 data paths of its own) does not have it.
func vendor(what, lib string) string {
	return what + " needs the " + lib + " extension, which rdmactl perf's driver path does not have"
}

var refusals = []refusal{
	{"hop_limit", "L", true, cmdutil.ExitUsage, whyRawEth + " (the GRH hop limit is 255, as perftest sets it)"},
	{"report-cycles", "C", false, cmdutil.ExitUsage, "rdmactl times with the kernel's clock in nanoseconds, not the CPU's cycle counter: it has no cycle counts to report (cycles made from nanoseconds would be invented)"},
	{"source_mac", "B", true, cmdutil.ExitUsage, whyRawEth},
	{"dest_mac", "E", true, cmdutil.ExitUsage, whyRawEth},
	{"dest_ip", "J", true, cmdutil.ExitUsage, whyRawEth},
	// perftest's -j is --source_ip; rdmactl's -j is --json.
	{"source_ip", "", true, cmdutil.ExitUsage, whyRawEth},
	{"dest_port", "K", true, cmdutil.ExitUsage, whyRawEth},
	{"source_port", "k", true, cmdutil.ExitUsage, whyRawEth},
	{"ethertype", "", true, cmdutil.ExitUsage, whyRawEth},
	{"server", "Z", false, cmdutil.ExitUsage, whyRawEth + " (here the side without a SERVER argument is the server)"},
	{"client", "P", false, cmdutil.ExitUsage, whyRawEth + " (here the side with a SERVER argument is the client)"},
	{"mac_fwd", "v", false, cmdutil.ExitUsage, whyRawEth},
	{"use_rss", "", false, cmdutil.ExitUsage, whyRawEth},
	{"remote_mac", "", true, cmdutil.ExitUsage, whyRawEth},
	{"local_mac", "", true, cmdutil.ExitUsage, whyRawEth},
	{"remote_ip", "", true, cmdutil.ExitUsage, whyRawEth},
	{"local_ip", "", true, cmdutil.ExitUsage, whyRawEth},
	{"remote_port", "", true, cmdutil.ExitUsage, whyRawEth},
	{"local_port", "", true, cmdutil.ExitUsage, whyRawEth},
	{"no_lock", "", false, cmdutil.ExitUsage, "libibverbs thread domains: rdmactl perf does not use libibverbs, and its post and poll loops take no locks"},
	{"use-null-mr", "", false, cmdutil.ExitUnsupported, vendor("a null memory region (ibv_alloc_null_mr)", "mlx5 provider's")},
	{"tcp", "", false, cmdutil.ExitUsage, whyRawEth},
	{"typical_pkt_size", "", true, cmdutil.ExitUsage, "the packet-pacing (PP) rate limiter's, which perftest runs on raw Ethernet only; rdmactl's limiter is SW (--rate_limit_type SW)"},
	// perftest skips the version record but still checks the peer's
	// (check_version_compatibility reads atof("") = 0 < 5.70) and exits.
	{"dont_xchg_versions", "", false, cmdutil.ExitUsage, "perftest itself ends every run there (it skips the version record, then finds the peer's version below 5.70); rdmactl always exchanges versions"},
	{"use_cuda", "", true, cmdutil.ExitUsage, accel("CUDA GPU memory")},
	{"use_cuda_bus_id", "", true, cmdutil.ExitUsage, accel("CUDA GPU memory")},
	{"use_cuda_dmabuf", "", false, cmdutil.ExitUsage, accel("CUDA GPU memory")},
	{"use_cuda_pcie_mapping", "", false, cmdutil.ExitUsage, accel("CUDA GPU memory")},
	{"use_data_direct", "", false, cmdutil.ExitUsage, accel("CUDA GPU memory (Data-Direct)")},
	{"cuda_mem_type", "", true, cmdutil.ExitUsage, accel("CUDA GPU memory")},
	{"use_rocm", "", true, cmdutil.ExitUsage, accel("ROCm GPU memory")},
	{"use_rocm_dmabuf", "", false, cmdutil.ExitUsage, accel("ROCm GPU memory")},
	{"use_neuron", "", true, cmdutil.ExitUsage, accel("AWS Neuron memory")},
	{"use_neuron_dmabuf", "", false, cmdutil.ExitUsage, accel("AWS Neuron memory")},
	{"use_hl", "", true, cmdutil.ExitUsage, accel("Habana Labs (Gaudi) memory")},
	{"use_mlu", "", true, cmdutil.ExitUsage, accel("Cambricon MLU memory")},
	{"use_mlu_dmabuf", "", false, cmdutil.ExitUsage, accel("Cambricon MLU memory")},
	{"use_opencl", "", true, cmdutil.ExitUsage, accel("OpenCL device memory")},
	{"opencl_platform_id", "", true, cmdutil.ExitUsage, accel("OpenCL device memory")},
	{"use_ib_dm_dmabuf", "", true, cmdutil.ExitUnsupported, vendor("on-device memory exported as DMA-BUF", "mlx5dv device memory")},
	{"gpu_touch", "", true, cmdutil.ExitUsage, accel("GPU touch")},
	{"raw_ipv6", "", false, cmdutil.ExitUsage, whyRawEth},
	{"use_old_post_send", "", false, cmdutil.ExitUsage, "libibverbs' legacy post call: rdmactl perf does not use libibverbs and has one post path"},
	{"promiscuous", "", false, cmdutil.ExitUsage, whyRawEth},
	{"sniffer", "", false, cmdutil.ExitUsage, whyRawEth},
	{"raw_mcast", "", false, cmdutil.ExitUsage, whyRawEth},
	{"flows", "", true, cmdutil.ExitUsage, whyRawEth},
	{"flows_burst", "", true, cmdutil.ExitUsage, whyRawEth},
	{"reply_every", "", true, cmdutil.ExitUsage, whyRawEth},
	{"vlan_en", "", false, cmdutil.ExitUsage, whyRawEth},
	{"vlan_pcp", "", true, cmdutil.ExitUsage, whyRawEth},
	{"aes_xts", "", false, cmdutil.ExitUnsupported, vendor("AES-XTS encryption", "mlx5dv crypto")},
	{"encrypt_on_tx", "", false, cmdutil.ExitUnsupported, vendor("AES-XTS encryption", "mlx5dv crypto")},
	{"sig_before", "", false, cmdutil.ExitUnsupported, vendor("AES-XTS encryption", "mlx5dv crypto")},
	{"aes_block_size", "", true, cmdutil.ExitUnsupported, vendor("AES-XTS encryption", "mlx5dv crypto")},
	{"kek_path", "", true, cmdutil.ExitUnsupported, vendor("AES-XTS encryption", "mlx5dv crypto")},
	{"credentials_path", "", true, cmdutil.ExitUnsupported, vendor("AES-XTS encryption", "mlx5dv crypto")},
	{"data_enc_keys_number", "", true, cmdutil.ExitUnsupported, vendor("AES-XTS encryption", "mlx5dv crypto")},
	{"data_enc_key_app_path", "", true, cmdutil.ExitUnsupported, vendor("AES-XTS encryption", "mlx5dv crypto")},
	{"log_dci_streams", "", true, cmdutil.ExitUnsupported, vendor("the DC transport's DCI streams", "mlx5dv DC")},
	{"log_active_dci_streams", "", true, cmdutil.ExitUnsupported, vendor("the DC transport's DCI streams", "mlx5dv DC")},
	{"use_ooo", "", false, cmdutil.ExitUnsupported, vendor("out-of-order data placement", "mlx5dv")},
	{"congest_type", "", true, cmdutil.ExitUnsupported, vendor("a congestion-control choice", "HiSilicon hnsdv")},
	{"bind_source_ip", "", true, cmdutil.ExitUsage, "use --bind (the server's listen address; with -R the client's source address)"},
	{"no_enhanced_reorder", "", false, cmdutil.ExitUnsupported, vendor("out-of-order receive WRs", "EFA efadv")},
	{"unsolicited_write", "", false, cmdutil.ExitUnsupported, vendor("unsolicited write-with-immediate", "EFA efadv")},
	{"sig_offload", "", false, cmdutil.ExitUnsupported, vendor("T10-DIF signature offload", "mlx5dv signature")},
}

// otherTests are perftest options rdmactl accepts for some of its tests
// only: for the others they are refused like the rest, naming the tests
// that take them (perftest refuses them there too).
var otherTests = []refusal{
	{"atomic_type", "A", true, cmdutil.ExitUsage, "applies to perf atomic only (as perftest)"},
	{"use-srq", "", false, cmdutil.ExitUsage, "applies to perf send only (as perftest)"},
	{"send_with_imm", "", false, cmdutil.ExitUsage, "applies to perf send only (as perftest)"},
	{"mcg", "g", false, cmdutil.ExitUsage, "multicast: applies to perf send only (as perftest)"},
	{"MGID", "M", true, cmdutil.ExitUsage, "multicast: applies to perf send only (as perftest)"},
	{"connectionless", "", false, cmdutil.ExitUsage, "multicast: applies to perf send only (as perftest)"},
	{"write_with_imm", "", false, cmdutil.ExitUsage, "applies to perf write only (as perftest)"},
	{"data_validation", "", false, cmdutil.ExitUsage, "applies to perf write and perf read only (as perftest)"},
	{"data_validation_debug", "", false, cmdutil.ExitUsage, "applies to perf write and perf read only (as perftest)"},
}

// addRefusedFlags registers refusals and otherTests not already in fs,
// hidden from --help, with perftest's argument kind.
func addRefusedFlags(fs *pflag.FlagSet) {
	for _, list := range [][]refusal{refusals, otherTests} {
		for _, r := range list {
			if fs.Lookup(r.long) != nil {
				continue
			}
			short := r.short
			if short != "" && fs.ShorthandLookup(short) != nil {
				short = ""
			}
			if r.arg {
				fs.StringP(r.long, short, "", r.why)
			} else {
				fs.BoolP(r.long, short, false, r.why)
			}
			_ = fs.MarkHidden(r.long)
		}
	}
}

// refused is the error for the first refused option given on the command
// line (args in order), or nil.
func refused(fs *pflag.FlagSet, args []string) error {
	byName := map[string]refusal{}
	for _, list := range [][]refusal{refusals, otherTests} {
		for _, r := range list {
			if f := fs.Lookup(r.long); f != nil && f.Hidden && f.Changed {
				byName[r.long] = r
			}
		}
	}
	if len(byName) == 0 {
		return nil
	}
	// The first one on the command line: the one a user reads first.
	first := ""
	for _, a := range args {
		if a == "--" {
			break
		}
		for name, r := range byName {
			if matchesFlag(a, r.long, fs.Lookup(name).Shorthand) {
				first = name
				break
			}
		}
		if first != "" {
			break
		}
	}
	if first == "" {
		for name := range byName { // e.g. a short letter among combined ones
			if first == "" || name < first {
				first = name
			}
		}
	}
	r := byName[first]
	return cmdutil.WithCode(r.code, fmt.Errorf("%s: %s", optionName(r.long, fs.Lookup(first).Shorthand), r.why))
}

// matchesFlag says whether the argument a names the option long (or its
// letter short).
func matchesFlag(a, long, short string) bool {
	if a == "--"+long || len(a) > len(long)+2 && a[:len(long)+3] == "--"+long+"=" {
		return true
	}
	return short != "" && len(a) >= 2 && a[0] == '-' && a[1] == short[0]
}

// optionName is "-X/--vector", or "--vector" for an option without a
// letter.
func optionName(long, short string) string {
	if short == "" {
		return "--" + long
	}
	return "-" + short + "/--" + long
}

// transportRefusal is the refusal of a -c transport perftest has and
// rdmactl perf does not (perftest's connStr[]: RC, UC, UD, RawEth, XRC,
// DC, SRD), or nil. XRC is refused once the device is known (needs.go).
func transportRefusal(conn string) error {
	switch strings.ToUpper(conn) {
	case "DC":
		return cmdutil.WithCode(cmdutil.ExitUnsupported, fmt.Errorf("-c DC: %s", vendor("the DC transport", "mlx5dv")))
	case "SRD":
		return cmdutil.WithCode(cmdutil.ExitUnsupported, fmt.Errorf("-c SRD: %s", vendor("the SRD transport", "efadv")))
	case "RAWETH":
		return cmdutil.UsageErrorf("-c RawEth: %s", whyRawEth)
	}
	return nil
}
