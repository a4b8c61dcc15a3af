package testenv

import (
	"cmp"
	"time"

	"github.com/longhaul-dev/longhaul/internal/natsbus"
)

// This file is the env's NATS: connections of their own, and the embedded
// server stopped and started again as a crash and a restart would.

// Bus opens a NATS connection of its own to the env's NATS, as another
// process would; t.Cleanup closes it.
func (e *Env) Bus(name string) *natsbus.Bus {
	e.T.Helper()
	nc, err := natsbus.Connect(natsbus.ClientOptions{URL: e.NATSURL, Name: name}, e.log)
	if err != nil {
		e.T.Fatalf("testenv: NATS: %v", err)
	}
	e.T.Cleanup(nc.Close)
	return natsbus.New(nc, natsbus.NewSubjects("", cmp.Or(e.Namespace, "default")), e.log)
}

// StartNATS starts the embedded NATS server (again, after StopNATS) on the
// env's NATS address.
func (e *Env) StartNATS() {
	e.T.Helper()
	if e.natsAddr == "" {
		e.T.Fatal("testenv: the env uses an external NATS")
	}
	var ns *natsbus.Server
	var err error
	// The port was just free, or was ours a moment ago: a few tries.
	for range 50 {
		if ns, err = natsbus.StartServer(e.natsAddr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		e.T.Fatalf("testenv: start NATS: %v", err)
	}
	e.mu.Lock()
	e.NATS = ns
	e.mu.Unlock()
	e.T.Cleanup(e.StopNATS)
}

// StopNATS stops the embedded NATS server, as a crash of it would.
func (e *Env) StopNATS() {
	e.mu.Lock()
	ns := e.NATS
	e.NATS = nil
	e.mu.Unlock()
	if ns != nil {
		ns.Shutdown()
	}
}
