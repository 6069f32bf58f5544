package chdbstore

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// lib is the loaded libchdb C API (the "new" chdb_* functions of chdb.h). The library is bound
// here with purego rather than through chdb-go's packages because those load the library in an
// init function and panic when it is missing; WaveHouse must instead fail at boot with a message
// that says how to get the library.
type lib struct {
	connect       func(argc int32, argv **byte) unsafe.Pointer
	closeConn     func(conn unsafe.Pointer)
	query         func(conn unsafe.Pointer, query, format string) unsafe.Pointer
	streamQuery   func(conn unsafe.Pointer, query, format string) unsafe.Pointer
	streamFetch   func(conn unsafe.Pointer, res unsafe.Pointer) unsafe.Pointer
	streamCancel  func(conn unsafe.Pointer, res unsafe.Pointer)
	destroyResult func(res unsafe.Pointer)
	resultBuffer  func(res unsafe.Pointer) *byte
	resultLength  func(res unsafe.Pointer) uintptr
	resultElapsed func(res unsafe.Pointer) float64
	resultRows    func(res unsafe.Pointer) uint64
	resultBytes   func(res unsafe.Pointer) uint64
	resultError   func(res unsafe.Pointer) *byte
}

// engine is the process-wide chDB engine. ClickHouse's engine is a singleton inside the process
// (a second chdb_connect closes the first connection), so this is the one piece of package-level
// state: it lets a second Store in the same process fail clearly instead of breaking the first.
var engine struct {
	mu   sync.Mutex
	open bool
	libs map[string]*lib
}

// errEngineInUse is returned by New while another Store holds the engine.
var errEngineInUse = errors.New("the chDB engine is already open in this process (one store per process)")

func loadLib(path string) (*lib, error) {
	if l, ok := engine.libs[path]; ok {
		return l, nil
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, err
	}
	l := &lib{}
	syms := []struct {
		fn   any
		name string
	}{
		{&l.connect, "chdb_connect"}, {&l.closeConn, "chdb_close_conn"}, {&l.query, "chdb_query"},
		{&l.streamQuery, "chdb_stream_query"}, {&l.streamFetch, "chdb_stream_fetch_result"},
		{&l.streamCancel, "chdb_stream_cancel_query"}, {&l.destroyResult, "chdb_destroy_query_result"},
		{&l.resultBuffer, "chdb_result_buffer"}, {&l.resultLength, "chdb_result_length"},
		{&l.resultElapsed, "chdb_result_elapsed"}, {&l.resultRows, "chdb_result_rows_read"},
		{&l.resultBytes, "chdb_result_bytes_read"}, {&l.resultError, "chdb_result_error"},
	}
	for _, s := range syms {
		addr, err := purego.Dlsym(h, s.name)
		if err != nil {
			return nil, fmt.Errorf("%s: missing symbol %s (library too old?): %w", path, s.name, err)
		}
		purego.RegisterFunc(s.fn, addr)
	}
	if engine.libs == nil {
		engine.libs = map[string]*lib{}
	}
	engine.libs[path] = l
	return l, nil
}

// conn is an open chDB connection.
type conn struct {
	l   *lib
	ptr unsafe.Pointer // chdb_connection * as returned by chdb_connect
	c   unsafe.Pointer // *ptr: the chdb_connection handle the query functions take
}

func openConn(l *lib, args []string) (*conn, error) {
	argv := make([]*byte, len(args))
	keep := make([][]byte, len(args))
	for i, a := range args {
		keep[i] = append([]byte(a), 0)
		argv[i] = &keep[i][0]
	}
	ptr := l.connect(int32(len(argv)), &argv[0])
	if ptr == nil {
		return nil, errors.New("chdb_connect failed")
	}
	c := *(*unsafe.Pointer)(ptr)
	if c == nil {
		return nil, errors.New("chdb_connect returned no connection")
	}
	return &conn{l: l, ptr: ptr, c: c}, nil
}

func (c *conn) close() { c.l.closeConn(c.ptr) }

// result is one chdb_result; free it with free.
type result struct {
	l *lib
	p unsafe.Pointer
}

func (r result) err() string {
	if r.p == nil {
		return ""
	}
	return cString(r.l.resultError(r.p))
}

// buf returns the result bytes; they are valid until free.
func (r result) buf() []byte {
	if r.p == nil {
		return nil
	}
	n := r.l.resultLength(r.p)
	b := r.l.resultBuffer(r.p)
	if b == nil || n == 0 {
		return nil
	}
	return unsafe.Slice(b, n)
}

func (r result) free() {
	if r.p != nil {
		r.l.destroyResult(r.p)
	}
}

func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
