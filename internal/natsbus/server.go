package natsbus

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/tlsfiles"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Server is an embedded NATS server: in-process only (dev, where the API
// and the worker share the process) or listening on an address too (server,
// for workers and APIs in other processes).
type Server struct {
	ns *server.Server
}

// StartServer starts an embedded NATS server. An empty addr opens no port:
// clients connect in-process through ConnectOption.
func StartServer(addr string) (*Server, error) {
	opts := &server.Options{
		ServerName: "longhaul",
		NoSigs:     true,
		NoLog:      true,
		DontListen: addr == "",
		// Deltas are small; a slow subscriber is cut off rather than
		// holding the server's memory.
		MaxPending: 64 << 20,
	}
	if addr != "" {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS address %q: %w", addr, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS address %q: bad port", addr)
		}
		opts.Host, opts.Port = host, p
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		if addr != "" {
			return nil, fmt.Errorf("embedded NATS did not start on %s (is the port taken?)", addr)
		}
		return nil, errors.New("embedded NATS did not start")
	}
	return &Server{ns: ns}, nil
}

// URL is the server's client URL, or empty when it listens on no port.
func (s *Server) URL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// ConnectOption connects a client to this server in-process, without a
// socket.
func (s *Server) ConnectOption() nats.Option { return nats.InProcessServer(s.ns) }

// Shutdown stops the server.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// ClientOptions say how to reach a NATS server or cluster.
type ClientOptions struct {
	// URL is one or more comma-separated nats:// (or tls://) URLs; user and
	// password or a token may be in them.
	URL string
	// Name names the connection in the server's monitoring.
	Name string
	// CredsFile is a NATS credentials file (JWT and seed).
	CredsFile string
	// TLSCA, TLSCert and TLSKey are PEM files: the CA that signed the
	// servers' certificates, and a client certificate and key.
	TLSCA, TLSCert, TLSKey string
	// InProcess connects to an embedded server without a socket.
	InProcess *Server
}

// Connect opens a NATS connection that reconnects for ever: a NATS that is
// down at start or restarts later costs live deltas, never the process.
func Connect(o ClientOptions, log *slog.Logger) (*nats.Conn, error) {
	if log == nil {
		log = slog.Default()
	}
	url := o.URL
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.RetryOnFailedConnect(true),
		// Deltas published while NATS is away are worth little once it is
		// back; keep a little, drop the rest.
		nats.ReconnectBufSize(1 << 20),
		nats.PingInterval(20 * time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected; live deltas pause, durable events go on", "error", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("NATS reconnected", "server", redact.URLs(c.ConnectedUrl()))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS", "subject", subject, "error", err)
		}),
	}
	if o.InProcess != nil {
		opts = append(opts, o.InProcess.ConnectOption())
		url = ""
	}
	if o.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.TLSCA != "" || o.TLSCert != "" {
		tc, err := tlsfiles.Files{CA: o.TLSCA, Cert: o.TLSCert, Key: o.TLSKey}.Config("NATS")
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(tc))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("NATS at %s: %w", redact.URLs(o.URL), err)
	}
	return nc, nil
}
