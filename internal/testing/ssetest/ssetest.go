// Package ssetest reads Server-Sent Events streams for tests: the API's
// chat and runs streams and the test model's stream are all read with it.
// It is strict where a browser is lenient — a line that is no SSE field is
// an error, and a frame cut short by the end of the stream is told apart
// from a clean end — so a malformed stream fails a test instead of being
// skipped over.
package ssetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Done is the data of the frame that ends an OpenAI chat stream.
const Done = "[DONE]"

// ErrMalformed is the error of a line that is no SSE field.
var ErrMalformed = errors.New("not an SSE field")

// Event is one frame of a stream.
type Event struct {
	ID    string
	Event string
	// Data is the frame's data lines, joined by "\n".
	Data string
	// Fields names the frame's lines in order ("id", "event", "data"), for
	// tests of a frame's shape.
	Fields []string
}

// HasID reports whether the frame had an id line, empty or not.
func (e Event) HasID() bool { return slices.Contains(e.Fields, "id") }

// Reader reads a stream frame by frame, as a live client does.
type Reader struct {
	sc *bufio.Scanner
}

// maxLine bounds one line of a stream.
const maxLine = 4 << 20

// NewReader reads the stream r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	sc.Split(scanLines)
	return &Reader{sc: sc}
}

// Next returns the next whole frame; comments are skipped. At the end of
// the stream it returns io.EOF when the stream ended between frames,
// io.ErrUnexpectedEOF when it ended inside one, and the read error when
// the stream broke. A frame cut short is never returned.
func (r *Reader) Next() (Event, error) {
	var e Event
	var data []string
	for r.sc.Scan() {
		line := r.sc.Text()
		if line == "" {
			if len(e.Fields) == 0 {
				continue
			}
			e.Data = strings.Join(data, "\n")
			return e, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return e, fmt.Errorf("%w: %q", ErrMalformed, line)
		}
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			e.ID = value
		case "event":
			e.Event = value
		case "data":
			data = append(data, value)
		case "retry":
		default:
			return e, fmt.Errorf("%w: %q", ErrMalformed, line)
		}
		e.Fields = append(e.Fields, name)
	}
	if err := r.sc.Err(); err != nil {
		return Event{}, err
	}
	if len(e.Fields) != 0 {
		return Event{}, io.ErrUnexpectedEOF
	}
	return Event{}, io.EOF
}

// ReadAll reads the whole stream r. Its error is nil when the stream ended
// cleanly between frames.
func ReadAll(r io.Reader) ([]Event, error) {
	rd := NewReader(r)
	var out []Event
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}

// scanLines splits a stream at the line ends SSE allows: "\r\n", "\n" and
// a lone "\r".
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0 && atEOF && len(data) > 0:
		return len(data), data, nil
	case i < 0:
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	}
	// A "\r" last in what was read: a "\n" may follow.
	return 0, nil, nil
}
