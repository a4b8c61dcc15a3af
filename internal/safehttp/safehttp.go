// Package safehttp provides an HTTP client for URLs that a language model
// chooses. Such URLs cannot be trusted: a model can be talked into fetching
// a cloud metadata endpoint, an admin interface on localhost or a service on
// the private network (server-side request forgery). The client refuses
// those destinations at connect time, after DNS resolution, so neither DNS
// rebinding nor a redirect can sneak past the check. The scheme and port
// of every URL, the first one and each redirect's, are checked before
// anything is resolved or dialed.
package safehttp

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked is returned (wrapped, also inside *url.Error) when a request
// is refused because of its scheme, its destination address or its port.
var ErrBlocked = errors.New("safehttp: blocked")

// ErrTooManyRedirects is returned (wrapped) when a response redirects more
// often than Options.MaxRedirects allows.
var ErrTooManyRedirects = errors.New("safehttp: too many redirects")

// Default values used for zero fields of Options.
const (
	DefaultTimeout      = 20 * time.Second
	DefaultMaxRedirects = 5
	// MaxRedirectsLimit bounds Options.MaxRedirects: a larger value is
	// treated as this one.
	MaxRedirectsLimit = 10
)

// DefaultAllowedPorts returns the ports a client may connect to when
// Options.AllowedPorts is empty: 80 and 443.
func DefaultAllowedPorts() []uint16 { return []uint16{80, 443} }

// Options configures NewClient. The zero value is the safe production
// configuration.
type Options struct {
	// Timeout bounds a whole request, including reading the body.
	// Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxRedirects is how many redirects a request may follow. Zero means
	// DefaultMaxRedirects; a negative value follows no redirects; values
	// above MaxRedirectsLimit mean MaxRedirectsLimit.
	MaxRedirects int
	// AllowedPorts are the only destination ports the client connects to.
	// Empty means DefaultAllowedPorts. The port of every URL, the first
	// and each redirect's, is checked before anything is dialed, and the
	// port of every connection again when it is dialed.
	AllowedPorts []uint16
	// AllowAddrs are exact destinations (address and port, as dialed after
	// DNS resolution) that pass the address and port checks, such as an
	// operator's own service or a test server on loopback. Their ports
	// also pass the URL check, for any host; the dial check then lets
	// through only these exact addresses on such ports.
	AllowAddrs []netip.AddrPort
	// AllowPrivate turns off the address and port checks. It is meant for
	// URLs that an operator declared and for tests, never for URLs that a
	// model chose. Only the scheme check stays.
	AllowPrivate bool
}

// NewClient returns an HTTP client that only speaks http and https, never
// uses a proxy from the environment, bounds time and redirects, and refuses
// to connect to non-public addresses or to ports outside
// Options.AllowedPorts, unless Options.AllowPrivate is set.
func NewClient(opts Options) *http.Client {
	return newClient(opts, nil)
}

// newClient is NewClient with a hook that sees every address that reaches
// the dial check, so tests can tell whether a request got that far.
func newClient(opts Options, onDial func(netip.AddrPort)) *http.Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxRedirects == 0 {
		opts.MaxRedirects = DefaultMaxRedirects
	}
	maxRedirects := min(max(opts.MaxRedirects, 0), MaxRedirectsLimit)
	if len(opts.AllowedPorts) == 0 {
		opts.AllowedPorts = DefaultAllowedPorts()
	}
	g := &guard{
		allowPrivate: opts.AllowPrivate,
		allowedPorts: slices.Clone(opts.AllowedPorts),
		onDial:       onDial,
	}
	for _, ap := range opts.AllowAddrs {
		g.allowAddrs = append(g.allowAddrs, netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port()))
	}
	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control:   g.control,
	}
	transport := &http.Transport{
		// A proxy would make the dial check test the proxy's address
		// instead of the destination's.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  opts.Timeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           16,
		MaxResponseHeaderBytes: 256 << 10,
	}
	return &http.Client{
		Transport: &urlGuard{base: transport, guard: g},
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("%w: stopped after %d", ErrTooManyRedirects, maxRedirects)
			}
			if err := g.checkURL(req.URL); err != nil {
				return blocked("redirect refused: %s", err.msg)
			}
			return nil
		},
	}
}

// blockedError names the refused destination and the reason. It matches
// ErrBlocked with errors.Is.
type blockedError struct {
	msg string
}

func (e *blockedError) Error() string        { return "safehttp: " + e.msg }
func (e *blockedError) Is(target error) bool { return target == ErrBlocked }

func blocked(format string, args ...any) *blockedError {
	return &blockedError{msg: fmt.Sprintf(format, args...)}
}

// checkScheme refuses every scheme but http and https.
func checkScheme(scheme string) *blockedError {
	switch strings.ToLower(scheme) {
	case "http", "https":
		return nil
	}
	return blocked("scheme %q is not allowed (only http and https)", scheme)
}

// urlGuard refuses requests whose URL the guard does not accept before
// they reach the transport, whatever protocols the transport knows. The
// client sends every hop of a redirect chain through it.
type urlGuard struct {
	base  *http.Transport
	guard *guard
}

// RoundTrip implements http.RoundTripper.
func (s *urlGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, blocked("request has no URL")
	}
	if err := s.guard.checkURL(req.URL); err != nil {
		closeBody(req)
		return nil, err
	}
	return s.base.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// underlying transport.
func (s *urlGuard) CloseIdleConnections() { s.base.CloseIdleConnections() }

// closeBody honours the RoundTripper contract of closing the request body
// even on errors.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// guard holds the policy, applied to URLs before a request is sent and to
// addresses when they are dialed.
type guard struct {
	allowPrivate bool
	allowedPorts []uint16
	allowAddrs   []netip.AddrPort
	onDial       func(netip.AddrPort)
}

// checkURL applies the scheme and port policy to a URL, so that a request
// to a port that is not allowed fails before DNS resolution and dialing.
func (g *guard) checkURL(u *url.URL) *blockedError {
	if err := checkScheme(u.Scheme); err != nil {
		return err
	}
	if g.allowPrivate {
		return nil
	}
	port, err := urlPort(u)
	if err != nil {
		return err
	}
	if slices.Contains(g.allowedPorts, port) || slices.ContainsFunc(g.allowAddrs, func(ap netip.AddrPort) bool { return ap.Port() == port }) {
		return nil
	}
	return blocked("%s: port %d is not allowed (allowed: %s)", u.Host, port, portList(g.allowedPorts))
}

// urlPort returns the port a URL names, or the default port of its scheme.
func urlPort(u *url.URL) (uint16, *blockedError) {
	p := u.Port()
	if p == "" {
		if strings.EqualFold(u.Scheme, "https") {
			return 443, nil
		}
		return 80, nil
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, blocked("%s: port %q is not valid", u.Host, p)
	}
	return uint16(n), nil
}

// control is the net.Dialer.Control hook. It runs after DNS resolution and
// before connect, with the very address being dialed.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	if g.allowPrivate {
		return nil
	}
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return blocked("network %q is not allowed", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return blocked("cannot parse dial address %q", address)
	}
	if g.onDial != nil {
		g.onDial(ap)
	}
	if slices.Contains(g.allowAddrs, netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port())) {
		return nil
	}
	return g.check(ap)
}

// check applies the address and port policy to one destination.
func (g *guard) check(ap netip.AddrPort) error {
	if reason := blockReason(ap.Addr()); reason != "" {
		return blocked("%s is %s", ap, reason)
	}
	if !slices.Contains(g.allowedPorts, ap.Port()) {
		return blocked("%s: port %d is not allowed (allowed: %s)", ap, ap.Port(), portList(g.allowedPorts))
	}
	return nil
}

func portList(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

// ReadLimited reads r until EOF or until limit bytes were read, whichever
// comes first. It reports whether r held more than limit bytes, in which
// case data holds exactly the first limit bytes. A negative limit is
// treated as 0.
func ReadLimited(r io.Reader, limit int64) (data []byte, truncated bool, err error) {
	limit = max(limit, 0)
	read := limit
	if read < math.MaxInt64 {
		read++ // one byte more tells whether anything was left
	}
	data, err = io.ReadAll(io.LimitReader(r, read))
	if int64(len(data)) > limit {
		return data[:limit], true, err
	}
	return data, false, err
}
