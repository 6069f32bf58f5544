package chdbstore

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/wavehouse/wavehouse/internal/store"
)

var (
	codeRE = regexp.MustCompile(`Code: (\d+)\.`)
	rowRE  = regexp.MustCompile(`\(at row (\d+)\)`)
)

// engineError maps the engine's exception text to the store sentinels.
func engineError(msg string, op store.Op) error {
	m := codeRE.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("%w: %s", store.ErrRejected, msg)
	}
	code, _ := strconv.ParseInt(m[1], 10, 32)
	return store.FromException(int32(code), msg, op)
}

// insertError is engineError plus the failing row, when the engine names it (1-based).
func insertError(msg string) error {
	err := engineError(msg, store.OpInsert)
	if m := rowRE.FindStringSubmatch(msg); m != nil {
		if n, perr := strconv.Atoi(m[1]); perr == nil && n > 0 {
			return &store.RowError{Row: n - 1, Err: err}
		}
	}
	return err
}
