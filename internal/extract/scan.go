package extract

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// The PDF library interprets a page's content stream, and a font's
// ToUnicode CMap, as a little PostScript program: it pushes every operand
// on a stack until an operator pops them, and holds about 50 bytes of
// memory per byte of a run of operands ("1 1 1 …"). A content stream that
// inflates 1000:1 makes a few KB of PDF into hundreds of MB of stack, so
// scan reads each stream first, with its own small tokenizer that follows
// the library's lexical rules, and refuses a stream the library would
// stack too much of. It counts conservatively: where it cannot tell
// whether the library pops (a keyword that may be a name defined with
// "def", "pop", a token inside an array) it counts the token as stacked.

// scanMode says which of the library's interpreters reads a stream.
type scanMode int

const (
	// scanContent is a page's content stream: every operator pops all
	// the operands stacked before it, so a run ends at each operator.
	scanContent scanMode = iota
	// scanCMap is a ToUnicode CMap: its interpreter pops only for the
	// operators it knows, so every token counts towards the bound.
	scanCMap
)

// maxNames bounds the distinct names a content stream may hold (a few
// dozen in real files); the scanner remembers them to tell a defined
// name's keyword from an operator.
const maxNames = 10_000

// Errors of scan, made *Error by the caller with the page's number.
var (
	errOperands   = errors.New("operands without an operator")
	errStreamSize = errors.New("stream over the size limit")
	errHexString  = errors.New("unterminated hex string")
	errNames      = errors.New("too many distinct names")
)

// scanner is scan's state: the bytes read, the operands stacked since
// the last operator, and the nesting of arrays and dictionaries.
type scanner struct {
	r        *bufio.Reader
	mode     scanMode
	read     int64
	maxBytes int64
	stacked  int
	maxStack int
	depth    int
	names    map[string]bool
	tok      []byte
}

// scan reads r, a stream's inflated content, to its end or to the first
// bound it passes: maxBytes of content, or maxStack operands the library
// would hold at once (see scanMode). It returns how many bytes it read.
func scan(r io.Reader, mode scanMode, maxBytes int64, maxStack int) (int64, error) {
	s := &scanner{r: bufio.NewReaderSize(io.LimitReader(r, maxBytes+1), 32<<10), mode: mode,
		maxBytes: maxBytes, maxStack: maxStack, names: map[string]bool{}}
	err := s.run()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err == nil && s.read > maxBytes {
		err = errStreamSize
	}
	return s.read, err
}

func (s *scanner) byte() (byte, error) {
	c, err := s.r.ReadByte()
	if err == nil {
		s.read++
		if s.read > s.maxBytes {
			return 0, errStreamSize
		}
	}
	return c, err
}

func (s *scanner) unread() {
	_ = s.r.UnreadByte()
	s.read--
}

// push counts one operand stacked.
func (s *scanner) push() error {
	if s.stacked++; s.stacked > s.maxStack {
		return fmt.Errorf("%w: over %d", errOperands, s.maxStack)
	}
	return nil
}

// run tokenizes the stream as the library's lexer does (lex.go's
// readToken), counting what its interpreter (ps.go's Interpret) stacks.
func (s *scanner) run() error {
	for {
		c, err := s.byte()
		if err != nil {
			return err
		}
		switch {
		case isSpace(c):
			continue
		case c == '%':
			if err := s.skipLine(); err != nil {
				return err
			}
			continue
		case c == '(':
			err = s.literalString()
		case c == '<':
			if err = s.hexOrDict(); err != nil {
				return err
			}
			continue
		case c == '>':
			if c, err = s.byte(); err == nil && c != '>' {
				s.unread()
			}
			if s.depth > 0 {
				s.depth--
			}
		case c == '[':
			s.depth++
		case c == ']':
			if s.depth > 0 {
				s.depth--
			}
		case c == '/':
			err = s.name()
		case c == '{', c == '}':
			s.operator()
			continue
		default:
			s.unread()
			if err = s.keyword(); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := s.push(); err != nil {
			return err
		}
	}
}

func (s *scanner) skipLine() error {
	for {
		c, err := s.byte()
		if err != nil || c == '\r' || c == '\n' {
			return err
		}
	}
}

// literalString skips a (string), nested parentheses and escapes
// included; one left open ends with the stream, as in the library.
func (s *scanner) literalString() error {
	depth := 1
	for {
		c, err := s.byte()
		if err != nil {
			return err
		}
		switch c {
		case '\\':
			if _, err := s.byte(); err != nil {
				return err
			}
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return nil
			}
		}
	}
}

// hexOrDict reads what follows a '<': a dictionary's "<<" or a <hex
// string>. The library loops forever on a hex string the stream ends in,
// so one is refused.
func (s *scanner) hexOrDict() error {
	c, err := s.byte()
	if errors.Is(err, io.EOF) {
		return errHexString
	} else if err != nil {
		return err
	}
	if c == '<' {
		s.depth++
		return s.push()
	}
	for c != '>' {
		if c, err = s.byte(); errors.Is(err, io.EOF) {
			return errHexString
		} else if err != nil {
			return err
		}
	}
	return s.push()
}

// regular reads a run of regular characters (neither white space nor a
// delimiter) into s.tok: a name's, a number's or an operator's.
func (s *scanner) regular() error {
	s.tok = s.tok[:0]
	for {
		c, err := s.byte()
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if err != nil || isSpace(c) || isDelim(c) {
			if err == nil {
				s.unread()
			}
			break
		}
		s.tok = append(s.tok, c)
	}
	return nil
}

func (s *scanner) name() error {
	if err := s.regular(); err != nil {
		return err
	}
	if s.mode == scanContent && !s.names[string(s.tok)] {
		if len(s.names) >= maxNames {
			return fmt.Errorf("%w: over %d", errNames, maxNames)
		}
		s.names[string(s.tok)] = true
	}
	return nil
}

// keyword reads a run of regular characters: a number, true, false or
// null (operands), or an operator.
func (s *scanner) keyword() error {
	if err := s.regular(); err != nil {
		return err
	}
	if len(s.tok) == 0 {
		// A delimiter the library refuses (a lone ')'): count it.
		if _, err := s.byte(); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return s.push()
	}
	kw := string(s.tok)
	switch {
	case kw == "true", kw == "false", kw == "null", isNumber(kw):
		return s.push()
	case s.depth > 0:
		// The library refuses a keyword inside an array or a
		// dictionary and drops that one operand, keeping what it
		// stacked before.
		s.depth = 0
		return nil
	case kw == "dict", kw == "currentdict", s.names[kw]:
		// Pushes a dictionary, or may be a name defined with def,
		// whose value the library pushes.
		return s.push()
	case kw == "begin", kw == "end", kw == "def", kw == "pop":
		// Handled by the interpreter itself: they pop one or two at
		// most, which the count does not take off.
		return nil
	}
	s.operator()
	return nil
}

// operator ends a run of operands where the library's interpreter pops
// them all (a content stream's); a CMap's keeps counting. Inside an array
// or a dictionary the library refuses an operator and drops that one
// operand, keeping what it stacked before.
func (s *scanner) operator() {
	if s.depth > 0 {
		s.depth = 0
		return
	}
	if s.mode == scanContent {
		s.stacked = 0
	}
}

func isSpace(c byte) bool {
	switch c {
	case '\x00', '\t', '\n', '\f', '\r', ' ':
		return true
	}
	return false
}

func isDelim(c byte) bool {
	switch c {
	case '<', '>', '(', ')', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

// isNumber reports whether kw is an integer or a real as the library
// reads them: a sign, digits and at most one dot.
func isNumber(kw string) bool {
	if kw[0] == '+' || kw[0] == '-' {
		kw = kw[1:]
	}
	digits, dots := 0, 0
	for i := range len(kw) {
		switch c := kw[i]; {
		case c == '.':
			dots++
		case c >= '0' && c <= '9':
			digits++
		default:
			return false
		}
	}
	return dots <= 1 && (digits > 0 || dots == 1)
}
