// Package testenv starts a whole Longhaul stack for integration tests: the
// real embedded Temporal server on free ports in a temporary directory, a
// worker, the API on a real port, and the scripted model (the one fake).
// Everything is stopped by t.Cleanup, so a test leaves no process behind.
package testenv

import (
	"context"
	"io/fs"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/llmtest"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/skills"
	lhworker "github.com/longhaul-dev/longhaul/worker"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
)

// TaskQueue is the task queue of the test stack.
const TaskQueue = "longhaul-test"

// Options adjust the stack.
type Options struct {
	// Layers are extra agent/skill layers over the built-ins.
	Layers []fs.FS
	// Tools replaces the default tools (current_time and a web_fetch that may
	// reach loopback, for tests).
	Tools []tools.Tool
	// API adjusts the API configuration (TaskQueue is set by the env).
	API api.Config
	// NoWorker starts the stack without a worker.
	NoWorker bool
	// Log receives the stack's logs; nil discards them.
	Log *slog.Logger
}

// Env is a running stack.
type Env struct {
	T       testing.TB
	Model   *llmtest.Server
	Server  *devserver.Server
	Client  client.Client
	Catalog *skills.Catalog
	Tools   *tools.Registry
	API     *api.Server
	URL     string // the API's base URL, e.g. http://127.0.0.1:1234
	log     *slog.Logger
	mu      sync.Mutex
	worker  sdkworker.Worker
}

// Start brings the stack up.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Env{T: t, Model: llmtest.New(t), log: log}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir:          t.TempDir(),
		FrontendAddr:     FreeAddr(t),
		Namespaces:       []string{"default"},
		SearchAttributes: workflows.SearchAttributes(),
		Logger:           log,
	})
	if err != nil {
		t.Fatalf("testenv: start temporal: %v", err)
	}
	e.Server = srv
	t.Cleanup(srv.Stop)
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendAddr(), Logger: quiet{}})
	if err != nil {
		t.Fatalf("testenv: dial: %v", err)
	}
	e.Client = c
	t.Cleanup(c.Close)

	toolset := opts.Tools
	if toolset == nil {
		toolset = []tools.Tool{&tools.CurrentTime{}, tools.NewWebFetch(tools.WebFetchOptions{})}
	}
	e.Tools, err = tools.NewRegistry(toolset...)
	if err != nil {
		t.Fatalf("testenv: tools: %v", err)
	}
	layers := append([]fs.FS{skills.Builtin()}, opts.Layers...)
	e.Catalog, err = skills.Load(layers...)
	if err == nil {
		err = e.Catalog.Validate(e.Tools.Has)
	}
	if err != nil {
		t.Fatalf("testenv: skills: %v", err)
	}
	if !opts.NoWorker {
		e.StartWorker()
	}
	cfg := opts.API
	cfg.TaskQueue = TaskQueue
	if cfg.ModelTimeout == 0 {
		cfg.ModelTimeout = 30 * time.Second
	}
	e.API = api.New(cfg, c, e.Catalog, log)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.URL = "http://" + ln.Addr().String()
	go func() { _ = e.API.App().Listener(ln) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.API.Shutdown(sctx)
	})
	return e
}

// Activities builds the activities the env's workers run, with fast flushes
// and heartbeats so tests move quickly.
func (e *Env) Activities() *activities.Activities {
	a := activities.New(activities.LLMConfig{BaseURL: e.Model.URL(), Model: "llmtest"}, e.Catalog, e.Tools, e.Client, e.log)
	a.HeartbeatInterval = 200 * time.Millisecond
	return a
}

// StartWorker starts a worker (stopping the current one, if any).
func (e *Env) StartWorker() {
	e.T.Helper()
	e.StopWorker()
	// No drain time: stopping the worker cuts its calls off as a crash would.
	w := sdkworker.New(e.Client, TaskQueue, lhworker.Options(0))
	lhworker.Register(w, e.Activities())
	if err := w.Start(); err != nil {
		e.T.Fatalf("testenv: start worker: %v", err)
	}
	e.mu.Lock()
	e.worker = w
	e.mu.Unlock()
	e.T.Cleanup(e.StopWorker)
}

// StopWorker stops the running worker, as a crash or a deploy would.
func (e *Env) StopWorker() {
	e.mu.Lock()
	w := e.worker
	e.worker = nil
	e.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}

// FreeAddr returns a free loopback host:port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
