package render

import (
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/mesh"
)

func meshTestReport(host0 string) *mesh.Report {
	ep := func(r int) mesh.Endpoint { return mesh.Endpoint{Rank: r} }
	test := func(s, d int) mesh.Test { return mesh.Test{Src: ep(s), Dst: ep(d)} }
	outcomes := []mesh.Outcome{
		{Test: test(0, 1), Round: 0, Figure: 1000},
		{Test: test(2, 3), Round: 0, Figure: 990},
		{Test: test(0, 2), Round: 1, Figure: 1010},
		{Test: test(3, 1), Round: 1, Figure: 500},
		{Test: test(0, 3), Round: 2, Err: "server side on rank 3: port rxe0/1 went down"},
		{Test: test(1, 2), Round: 2, Figure: 50.5},
	}
	names := func(e mesh.Endpoint) mesh.EndpointName {
		h := []string{host0, "b", "c", "d"}[e.Rank]
		return mesh.EndpointName{Rank: e.Rank, Host: h, Device: "rxe0"}
	}
	return mesh.NewReport(outcomes, false, names, mesh.Limits{}, nil, 3)
}

// TestMeshReport: the matrix has a cell a test, "-" for the failed one
// and "." elsewhere; slow and failed cells are colored only when asked;
// the failed test's reason, the slowest and the suspects follow.
func TestMeshReport(t *testing.T) {
	var b strings.Builder
	if err := MeshReport(&b, meshTestReport("a"), false); err != nil {
		t.Fatal(err)
	}
	want := `6 tests, 1 failed, median 990 MiB/s

MiB/s, rows send to columns (- failed, . not tested):
              0      1      2      3
0 a/rxe0      .   1000   1010      -
1 b/rxe0      .      .  50.50      .
2 c/rxe0      .      .      .    990
3 d/rxe0      .    500      .      .

failed:
SRC     DST     ROUND  ERROR
a/rxe0  d/rxe0  2      server side on rank 3: port rxe0/1 went down

slowest:
SRC     DST     ROUND  MIB/S  SHARE
b/rxe0  c/rxe0  2      50.50  5%
d/rxe0  b/rxe0  1      500    51%
c/rxe0  d/rxe0  0      990    100%

suspects (the endpoints most often in slow or failed tests):
ENDPOINT  BAD  TESTS  SHARE
d/rxe0    2    3      67%
b/rxe0    2    3      67%
a/rxe0    1    3      33%
c/rxe0    1    3      33%
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("colors without color")
	}
	b.Reset()
	if err := MeshReport(&b, meshTestReport("a"), true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{sgrSlow + "50.50" + sgrReset, sgrSlow + "  500" + sgrReset, sgrFailed + "    -" + sgrReset} {
		if !strings.Contains(b.String(), c) {
			t.Errorf("no %q in:\n%s", c, b.String())
		}
	}
	if strings.Contains(b.String(), sgrSlow+" 1000") {
		t.Errorf("a test at the median colored slow")
	}
	// A host name comes from another rank: printed, never obeyed.
	b.Reset()
	if err := MeshReport(&b, meshTestReport("evil\x1b[2J"), false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "\x1b") || !strings.Contains(b.String(), `evil\x1b[2J/rxe0`) {
		t.Errorf("a hostile host name:\n%s", b.String())
	}
}

// TestMeshHTML: one row an endpoint with a cell each, the failed cell
// dark with its reason as its title, measured cells colored by share,
// and names escaped.
func TestMeshHTML(t *testing.T) {
	var b strings.Builder
	if err := MeshHTML(&b, meshTestReport(`<script>alert("x")</script>`), "mesh <test>"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"<title>mesh &lt;test&gt;</title>",
		`<th class="row">0 &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;/rxe0</th>`,
		`<td class="failed" title="server side on rank 3: port rxe0/1 went down">-</td>`,
		`<td style="background:hsl(120,70%,75%)" title="1000 MiB/s, 101% of the median">1000</td>`,
		`<td style="background:hsl(0,70%,75%)" title="50.50 MiB/s, 5% of the median">50.50</td>`,
		"<h2>Suspects</h2>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("no %s in:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script") {
		t.Errorf("a host name became markup:\n%s", page)
	}
	// 4 endpoints: a header row and 4 rows of 4 cells in the matrix.
	matrix := page[strings.Index(page, "<table>"):strings.Index(page, "</table>")]
	if n := strings.Count(matrix, "<td"); n != 16 || strings.Count(matrix, "<tr>") != 5 {
		t.Errorf("%d cells, %d rows in the matrix:\n%s", n, strings.Count(matrix, "<tr>"), matrix)
	}
}
