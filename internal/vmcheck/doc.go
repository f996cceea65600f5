// Package vmcheck holds the smoke test of the VM test harness (vm/run,
// make vmtest): it checks that the guest looks the way the kernel tests of
// the other packages assume, so that a broken harness fails here, once and
// clearly, instead of as a puzzling failure in someone's test.
package vmcheck
