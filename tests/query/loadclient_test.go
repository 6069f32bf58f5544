package query_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
)

// rawConn is one client of the benchmark's load generator: a keep-alive HTTP/1.1 connection
// that sends one prebuilt request and reads the answer with no allocation. It exists so the
// load generator, which shares the 2 cores with the gateway, costs a few microseconds per
// request rather than the tens that net/http's client costs (a goroutine pair per
// connection, header maps, a pooled-connection handshake per request); the gateway still
// parses a real HTTP request off a socket and writes a real answer back.
type rawConn struct {
	addr string
	req  []byte
	conn net.Conn
	r    *bufio.Reader
}

// newRawConn prepares a client that POSTs body to rawURL.
func newRawConn(rawURL, contentType, body string) (*rawConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		u.RequestURI(), u.Host, contentType, len(body), body)
	return &rawConn{addr: u.Host, req: b.Bytes()}, nil
}

// do sends the request and reads the whole answer; it fails unless the status is 200 and,
// when want is not empty, X-Cache is want.
func (c *rawConn) do(want string) error {
	if c.conn == nil {
		conn, err := net.Dial("tcp", c.addr)
		if err != nil {
			return err
		}
		c.conn, c.r = conn, bufio.NewReaderSize(conn, 64<<10)
	}
	if _, err := c.conn.Write(c.req); err != nil {
		c.close()
		return err
	}
	if err := c.read(want); err != nil {
		c.close()
		return err
	}
	return nil
}

func (c *rawConn) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

var errBadAnswer = errors.New("bad answer")

// read reads one answer: status line, headers, then a Content-Length or chunked body,
// discarded.
func (c *rawConn) read(want string) error {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 12 || !bytes.Equal(line[9:12], []byte("200")) {
		return fmt.Errorf("%w: status line %q", errBadAnswer, bytes.TrimSpace(line))
	}
	length, chunked, gotWant := -1, false, want == ""
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return fmt.Errorf("%w: header %q", errBadAnswer, line)
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return fmt.Errorf("%w: Content-Length %q", errBadAnswer, value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("X-Cache")):
			if !gotWant && string(value) != want {
				return fmt.Errorf("%w: X-Cache %q, want %q", errBadAnswer, value, want)
			}
			gotWant = true
		}
	}
	if !gotWant {
		return fmt.Errorf("%w: no X-Cache header, want %q", errBadAnswer, want)
	}
	if !chunked {
		if length < 0 {
			return fmt.Errorf("%w: neither Content-Length nor chunked", errBadAnswer)
		}
		_, err = c.r.Discard(length)
		return err
	}
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, err := strconv.ParseUint(string(bytes.TrimRight(line, "\r\n")), 16, 32)
		if err != nil {
			return fmt.Errorf("%w: chunk size %q", errBadAnswer, line)
		}
		if size == 0 {
			_, err = c.r.Discard(2) // the CRLF after the last chunk (no trailers are sent)
			return err
		}
		if _, err := c.r.Discard(int(size) + 2); err != nil {
			return err
		}
	}
}
