package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestTemporalOverMutualTLS puts a TLS terminator that demands a client
// certificate signed by a test CA in front of a Temporal server, as a
// self-hosted cluster with mTLS (or a Temporal Cloud mTLS namespace) is:
// `longhaul setup` with the CA, the certificate and the key gets through;
// without the certificate it is refused.
func TestTemporalOverMutualTLS(t *testing.T) {
	pki := newPKI(t)
	addr := testenv.FreeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: t.TempDir(), FrontendAddr: addr, Namespaces: []string{"default"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	front := tlsProxy(t, pki.serverTLS(true), addr)

	t.Setenv("LONGHAUL_TEMPORAL_ADDRESS", front)
	t.Setenv("LONGHAUL_TEMPORAL_TLS_CA", pki.caFile)
	t.Setenv("LONGHAUL_TEMPORAL_TLS_CERT", pki.clientCert)
	t.Setenv("LONGHAUL_TEMPORAL_TLS_KEY", pki.clientKey)
	var out, errs bytes.Buffer
	if code := Main([]string{"setup"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "registered the search attributes") {
		t.Fatalf("setup over mTLS = %d, out %q, err %q", code, out.String(), errs.String())
	}

	t.Setenv("LONGHAUL_TEMPORAL_TLS_CERT", "")
	t.Setenv("LONGHAUL_TEMPORAL_TLS_KEY", "")
	out.Reset()
	errs.Reset()
	if code := Main([]string{"setup"}, &out, &errs); code != 1 || !strings.Contains(errs.String(), "cannot reach Temporal at "+front) {
		t.Fatalf("setup without the client certificate = %d, out %q, err %q", code, out.String(), errs.String())
	}
}

// TestTemporalAPIKey: with LONGHAUL_TEMPORAL_API_KEY the frontend receives
// the key as a bearer token, over TLS, and the key is never printed.
func TestTemporalAPIKey(t *testing.T) {
	pki := newPKI(t)
	var mu sync.Mutex
	var seen []string
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(pki.serverTLS(false))), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(stream.Context())
		mu.Lock()
		seen = append(seen, md.Get("authorization")...)
		mu.Unlock()
		return status.Error(codes.Unauthenticated, "this frontend lets nobody in")
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	const key = "tcld-api-key-0123456789"
	t.Setenv("LONGHAUL_TEMPORAL_ADDRESS", ln.Addr().String())
	t.Setenv("LONGHAUL_TEMPORAL_TLS_CA", pki.caFile)
	t.Setenv("LONGHAUL_TEMPORAL_API_KEY", key)
	var out, errs bytes.Buffer
	if code := Main([]string{"setup"}, &out, &errs); code != 1 {
		t.Fatalf("setup against a frontend that refuses everyone = %d, out %q", code, out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[0] != "Bearer "+key {
		t.Errorf("the frontend saw authorization %q, want the API key as a bearer token", seen)
	}
	if strings.Contains(out.String()+errs.String(), key) {
		t.Errorf("the API key was printed: %q", errs.String())
	}
}

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, as PEM files.
type testPKI struct {
	ca                    *x509.Certificate
	caKey                 *ecdsa.PrivateKey
	caFile                string
	server                tls.Certificate
	clientCert, clientKey string
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{}
	caKey, caDER := issue(t, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}, nil, nil)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, p.caKey = ca, caKey
	p.caFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	srvKey, srvDER := issue(t, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "frontend"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	p.server = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	cliKey, cliDER := issue(t, &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "longhaul"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
	p.clientCert = writePEM(t, dir, "client.pem", "CERTIFICATE", cliDER)
	der, err := x509.MarshalECPrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	p.clientKey = writePEM(t, dir, "client-key.pem", "EC PRIVATE KEY", der)
	return p
}

// serverTLS is the frontend's TLS configuration; mutual asks every client
// for a certificate the CA signed.
func (p *testPKI) serverTLS(mutual bool) *tls.Config {
	tc := &tls.Config{Certificates: []tls.Certificate{p.server}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
	if mutual {
		pool := x509.NewCertPool()
		pool.AddCert(p.ca)
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc
}

func issue(t *testing.T, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tlsProxy terminates TLS with tc and forwards each connection to backend
// in the clear; it stops when the test ends.
func tlsProxy(t *testing.T, tc *tls.Config, backend string) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tc)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer in.Close()
				if err := in.(*tls.Conn).Handshake(); err != nil {
					return
				}
				outc, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer outc.Close()
				done := make(chan struct{})
				go func() {
					_, _ = io.Copy(outc, in)
					outc.(*net.TCPConn).CloseWrite()
					close(done)
				}()
				_, _ = io.Copy(in, outc)
				in.Close()
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}
