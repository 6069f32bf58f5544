// Command covercheck enforces the coverage thresholds of .testcoverage.yml on a Go cover profile
// (go-test-coverage is not available on our machines, so we keep this small checker).
//
//	go run ./internal/tools/covercheck -profile coverage.out -config .testcoverage.yml
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	profile := flag.String("profile", "coverage.out", "cover profile written by go test -coverprofile")
	cfgPath := flag.String("config", ".testcoverage.yml", "thresholds")
	flag.Parse()
	os.Exit(run(*profile, *cfgPath, os.Stdout))
}

func run(profilePath, cfgPath string, out io.Writer) int {
	cfg, err := readConfig(cfgPath)
	if err != nil {
		fmt.Fprintf(out, "covercheck: %v\n", err)
		return 2
	}
	f, err := os.Open(profilePath)
	if err != nil {
		fmt.Fprintf(out, "covercheck: %v (run make test first)\n", err)
		return 2
	}
	defer f.Close()
	blocks, err := parseProfile(f)
	if err != nil {
		fmt.Fprintf(out, "covercheck: %s: %v\n", profilePath, err)
		return 2
	}
	report := evaluate(cfg, blocks)
	report.print(out)
	if len(report.failures) > 0 {
		return 1
	}
	return 0
}
