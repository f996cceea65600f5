//go:build vmtest

package main

import (
	"io"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/exporter"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/promtext"
)

// Where a scrape's CPU goes, in-process in the VM (go test -tags vmtest
// -bench VMScrape -cpuprofile): a served scrape is Collect + Write.
func BenchmarkVMScrape(b *testing.B) {
	c := exporter.New(exporter.Options{
		Open: func() (*inventory.Source, func(), error) {
			src, err := inventory.Open("", false)
			if err != nil {
				return nil, nil, err
			}
			return src, func() { src.Close() }, nil
		},
		Timeout: time.Minute, GIDInterval: time.Hour,
	})
	c.Collect() // the GID tables, as the first scrape does
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := promtext.Write(io.Discard, c.Collect()); err != nil {
			b.Fatal(err)
		}
	}
}
