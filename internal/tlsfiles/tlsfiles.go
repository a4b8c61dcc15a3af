// Package tlsfiles builds a client TLS configuration from PEM files, the
// way operators hand them over: a CA to trust, and a client certificate
// and key for mutual TLS. NATS and Temporal connections both use it.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// Files names the PEM files of a TLS client; each may be empty.
type Files struct {
	// CA is the certificate of the authority that signed the servers'
	// certificates; empty trusts the system's roots.
	CA string
	// Cert and Key are a client certificate and its key, for servers that
	// ask for one; both or neither.
	Cert, Key string
	// ServerName overrides the name the server's certificate must carry;
	// empty is the host dialled.
	ServerName string
}

// Config loads the files into a TLS 1.2+ client configuration. what names
// the connection in errors ("NATS", "Temporal").
func (f Files) Config(what string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("%s TLS CA: %w", what, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s TLS CA %s: no certificate in it", what, f.CA)
		}
		tc.RootCAs = pool
	}
	if f.Cert != "" || f.Key != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("%s TLS client certificate: %w", what, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
