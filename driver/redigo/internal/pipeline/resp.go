package pipeline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/quorumlock/quorumlock/driver"
)

// appendArray appends the header of a command of n words.
func appendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// appendBulk appends one word of a command.
func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendCommand appends one command given as words.
func appendCommand(b []byte, words []string) []byte {
	b = appendArray(b, len(words))
	for _, w := range words {
		b = appendBulk(b, w)
	}
	return b
}

// appendEval appends EVALSHA (or, with src, EVAL) of call with its
// arguments as sent: call.Args and, for a script that takes a hint, hint
// (see driver.Call.Argv).
func appendEval(b []byte, call driver.Call, hint string, src bool) []byte {
	n := len(call.Args)
	if call.Script.TakesHint {
		n++
	}
	b = appendArray(b, 3+len(call.Keys)+n)
	if src {
		b = appendBulk(b, "EVAL")
		b = appendBulk(b, call.Script.Src)
	} else {
		b = appendBulk(b, "EVALSHA")
		b = appendBulk(b, call.Script.SHA)
	}
	b = appendBulk(b, strconv.Itoa(len(call.Keys))) // no allocation below 100
	for _, k := range call.Keys {
		b = appendBulk(b, k)
	}
	for _, a := range call.Args {
		b = appendBulk(b, a)
	}
	if call.Script.TakesHint {
		b = appendBulk(b, hint)
	}
	return b
}

// Bounds on what a reply may claim, so that a corrupt or hostile stream
// fails the connection instead of exhausting memory or the stack.
const (
	maxBulk  = 512 << 20 // Redis's own proto-max-bulk-len default
	maxArray = 1 << 20
	maxDepth = 16
	maxLine  = 1 << 20
)

// errProtocol reports a reply stream that is not RESP2.
var errProtocol = errors.New("redigo: malformed reply from the master")

// readReply reads one reply in the driver's neutral form (see driver.Master):
// an error reply, at any depth, is a driver.Error value, for the caller to
// turn into an error where it stands for one.
func readReply(br *bufio.Reader) (any, error) {
	return readValue(br, 0)
}

func readValue(br *bufio.Reader, depth int) (any, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, err
	}
	switch line[0] {
	case '+':
		return string(line[1:]), nil
	case '-':
		return driver.Error(line[1:]), nil
	case ':':
		n, err := parseInt(line[1:])
		if err != nil {
			return nil, err
		}
		return n, nil
	case '$':
		n, err := parseLength(line[1:], "bulk", maxBulk)
		if err != nil || n == -1 {
			return nil, err
		}
		return readBulk(br, int(n))
	case '*':
		n, err := parseLength(line[1:], "array", maxArray)
		switch {
		case err != nil || n == -1:
			return nil, err
		case depth >= maxDepth:
			return nil, fmt.Errorf("%w: arrays nested deeper than %d", errProtocol, maxDepth)
		}
		out := make([]any, 0, min(n, 64)) // grown as elements come: the length is only a claim
		for range n {
			v, err := readValue(br, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: type %q", errProtocol, line[0])
}

// parseLength parses the length of a bulk string or an array (what), at
// most limit; -1 is the nil reply's.
func parseLength(b []byte, what string, limit int64) (int64, error) {
	n, err := parseInt(b)
	if err == nil && n != -1 && (n < 0 || n > limit) {
		err = fmt.Errorf("%w: %s length %d", errProtocol, what, n)
	}
	return n, err
}

// readLine returns one line without its CRLF. The slice is valid until the
// next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull { // a long error message: gather it
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull && len(long) <= maxLine {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		if err == bufio.ErrBufferFull || len(long) > maxLine {
			return nil, fmt.Errorf("%w: line longer than %d bytes", errProtocol, maxLine)
		}
		line = long
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line %q", errProtocol, line)
	}
	return line[:len(line)-2], nil
}

// readBulk reads a bulk string's n bytes and its CRLF.
func readBulk(br *bufio.Reader, n int) (string, error) {
	var s string
	if n+2 <= br.Size() {
		b, err := br.Peek(n + 2)
		if err != nil {
			return "", unexpectedEOF(err)
		}
		s = string(b[:n])
		br.Discard(n + 2)
		if b[n] != '\r' || b[n+1] != '\n' {
			return "", fmt.Errorf("%w: bulk string not ended by CRLF", errProtocol)
		}
		return s, nil
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(br, b); err != nil {
		return "", unexpectedEOF(err)
	}
	if b[n] != '\r' || b[n+1] != '\n' {
		return "", fmt.Errorf("%w: bulk string not ended by CRLF", errProtocol)
	}
	return string(b[:n]), nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseInt parses a reply's decimal integer without allocating.
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 20 {
		return 0, fmt.Errorf("%w: integer %q", errProtocol, b)
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, fmt.Errorf("%w: integer %q", errProtocol, "-")
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: integer %q", errProtocol, b)
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, fmt.Errorf("%w: integer %q out of range", errProtocol, b)
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, nil
}
