package chaos

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// result is one row of the scenario table.
type result struct {
	Scenario   string
	Cycles     int
	Seed       uint64
	Acked      int
	Lost       int
	Duplicated int
	Dedupes    bool
	InDoubt    string // the writer's in-doubt batches by outcome, summed over the process's lives
	Verdict    string
}

// report is the table of every scenario run by the package. It is safe for concurrent use.
type report struct {
	mu   sync.Mutex
	rows []result
}

func (r *report) add(res result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, res)
}

// markdown renders the table.
func (r *report) markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString("| scenario | cycles | acknowledged rows | lost | duplicated | table dedupes | verdict | in-doubt batches | seed |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|---|---|---:|\n")
	for _, x := range r.rows {
		dd := "no"
		if x.Dedupes {
			dd = "yes"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s | %s | %d |\n",
			x.Scenario, x.Cycles, x.Acked, x.Lost, x.Duplicated, dd, x.Verdict, x.InDoubt, x.Seed)
	}
	return b.String()
}

// write prints the table to w and, when path is not empty, writes it to that file; with no
// scenario run it does nothing.
func (r *report) write(w io.Writer, path string) error {
	r.mu.Lock()
	n := len(r.rows)
	r.mu.Unlock()
	if n == 0 {
		return nil
	}
	md := r.markdown()
	fmt.Fprintf(w, "\nchaos scenarios:\n%s\n", md)
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(md), 0o644)
}
