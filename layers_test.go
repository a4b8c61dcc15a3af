package longhaul_test

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// The layers of the module, lowest first. A package may import the packages
// of the layers its rule names, never one above: the domain types know
// nothing; the contract knows only them; libraries and adapters know nothing
// of the agent-file format or the engine; the HTTP layer reads runs through
// the contract, never through the activities or the workflows, and its
// handler packages (one per API) know neither the server nor the run
// engine's client (TestHandlersKnowNoTemporal); the wiring
// (cmd/longhaul) may import everything but the test doubles, which nothing
// outside tests imports. README's "Layout" draws the same map.
const module = "github.com/longhaul-dev/longhaul"

var (
	domain   = []string{"."}
	contract = []string{"contract"}
	// libs are leaf libraries: no Longhaul concept beyond the domain types.
	libs = []string{"internal/redact", "internal/safehttp", "internal/sqlitedb", "internal/sqldb", "internal/tlsfiles",
		"internal/metrics", "internal/tracing", "internal/searchattr", "internal/identity", "internal/access",
		"internal/config", "internal/textcut", "internal/endpoints", "internal/extract", "internal/chunk", "internal/pgvector",
		"internal/strict", "internal/window", "internal/budget", "internal/toolargs"}
	// adapters talk to one outside thing each: tools and HTTP tools, MCP
	// servers, the stores, NATS, the embedded Temporal server, the model
	// endpoint's start-up check.
	adapters = []string{"internal/tools", "internal/mcp", "internal/store", "internal/memory",
		"internal/natsbus", "internal/devserver", "internal/modelcheck", "internal/usercreds", "internal/docstore",
		"internal/docsearch"}
	catalog = []string{"skills", "internal/toolset"}
	// handlers are the HTTP API's handler packages, one per API, which
	// the server (api) registers.
	handlers = []string{"api/documents", "api/account", "api/webhooksapi", "api/usageapi"}
	// runHandlers are the handler packages of the APIs that run agents:
	// they reach runs through the runs service and its Gate, never the
	// engine's client.
	runHandlers = []string{"api/runsapi", "api/responsesapi", "api/schedulesapi", "api/a2aapi", "api/mcpapi"}
	harnesses   = []string{"internal/testing/...", "test/...", "bench", "deploy"}
)

// layers maps each package (a pattern: "x/..." is x and everything under
// it) to what it may import of the module.
var layers = []struct {
	pkgs, may [][]string
}{
	{pkgs: [][]string{domain}},
	{pkgs: [][]string{contract}, may: [][]string{domain}},
	{pkgs: [][]string{libs}, may: [][]string{domain, libs}},
	{pkgs: [][]string{adapters}, may: [][]string{domain, libs, adapters}},
	{pkgs: [][]string{{"skills"}}, may: [][]string{domain, libs, {"internal/tools"}}},
	{pkgs: [][]string{{"internal/toolset"}}, may: [][]string{domain, libs, adapters, {"skills"}}},
	{pkgs: [][]string{{"internal/evals"}}, may: [][]string{domain, contract, libs}},
	{pkgs: [][]string{{"activities"}}, may: [][]string{domain, contract, libs, adapters, {"skills", "internal/evals"}}},
	// Workflow code orchestrates: it names activities and reads no store,
	// no network and no clock of its own.
	{pkgs: [][]string{{"workflows"}}, may: [][]string{domain, contract, {"activities", "internal/textcut"}}},
	{pkgs: [][]string{{"worker"}}, may: [][]string{domain, contract, libs, {"activities", "workflows"}}},
	// The runs service owns what the HTTP API does to a run, and alone
	// speaks to Temporal for it: the contract's workflows and queries, the
	// NATS deltas and the blob store; no HTTP, no workflow code.
	{pkgs: [][]string{{"internal/runs"}}, may: [][]string{domain, contract, libs, adapters}},
	// The HTTP API's wire types and their pure converters: a library the
	// api package decodes into and answers with; no HTTP, no adapter.
	{pkgs: [][]string{{"internal/wire"}}, may: [][]string{domain, contract, libs}},
	// What every HTTP handler package shares: errors, the principal, JSON
	// bodies; no handler, no run engine.
	{pkgs: [][]string{{"api/web"}}, may: [][]string{domain, libs}},
	// The one SSE writer of every stream; generic over what a stream
	// follows, so it knows no run engine either.
	{pkgs: [][]string{{"api/sse"}}, may: [][]string{domain, libs, {"api/web"}}},
	// One package per API's handlers, with a small handlers struct over
	// the stores: the domain, the contract, libraries, adapters, the wire
	// types and web; never the run engine, the server or the engine's code.
	{pkgs: [][]string{handlers}, may: [][]string{domain, contract, libs, adapters, {"internal/wire", "api/web"}}},
	// What the handler packages that run agents share over the runs
	// service: a run read for its owner, input handed to it, its audit,
	// the agent a request names, its errors in the API's words; no
	// handler, no server.
	{pkgs: [][]string{{"api/runweb"}}, may: [][]string{domain, contract, libs, {"skills", "internal/runs", "internal/wire", "api/web"}}},
	{pkgs: [][]string{runHandlers}, may: [][]string{domain, contract, libs, adapters,
		{"skills", "internal/runs", "internal/wire", "api/web", "api/sse", "api/runweb"}}},
	// Chat Completions is one of them that stores a chat's file parts as
	// the documents package stores uploads, through its handlers.
	{pkgs: [][]string{{"api/chatapi"}}, may: [][]string{domain, contract, libs, adapters,
		{"skills", "internal/runs", "internal/wire", "api/web", "api/sse", "api/runweb", "api/documents"}}},
	{pkgs: [][]string{{"api"}}, may: [][]string{domain, contract, libs, adapters, catalog, handlers, runHandlers,
		{"api/chatapi", "internal/runs", "internal/wire", "api/web", "api/sse", "api/runweb"}}},
	{pkgs: [][]string{{"cmd/longhaul"}}, may: [][]string{domain, contract, libs, adapters, catalog,
		{"activities", "workflows", "worker", "internal/runs", "api", "internal/evals"}}},
	{pkgs: [][]string{harnesses}, may: [][]string{{"..."}}},
}

// match reports whether rel (a package path relative to the module, "."
// for the root) matches pattern.
func match(pattern, rel string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

func matchAny(groups [][]string, rel string) bool {
	for _, g := range groups {
		for _, p := range g {
			if match(p, rel) {
				return true
			}
		}
	}
	return false
}

// allowed reports whether package from may import package to (both
// relative to the module), and whether from has a layer at all.
func allowed(from, to string) (ok, known bool) {
	for _, l := range layers {
		if matchAny(l.pkgs, from) {
			return matchAny(l.may, to), true
		}
	}
	return false, false
}

// moduleImports lists each package of the module (relative, as rel
// gives it) with its imports.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		from, _ := rel(fields[0])
		pkgs[from] = fields[1:]
	}
	return pkgs
}

func rel(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(importPath, module+"/")
	return path.Clean(r), ok
}

// TestLayers fails on an import that goes up a layer, and on a package
// that has no layer (place it in the table above and in README's map).
func TestLayers(t *testing.T) {
	for from, imports := range moduleImports(t) {
		if _, known := allowed(from, "."); !known {
			t.Errorf("%s has no layer: add it to layers_test.go and the README's layout", from)
			continue
		}
		for _, imp := range imports {
			to, ours := rel(imp)
			if !ours {
				continue
			}
			if ok, _ := allowed(from, to); !ok {
				t.Errorf("%s imports %s, which its layer may not", from, to)
			}
		}
	}
}

// httpLayer is the server and its handler packages: they reach runs through
// internal/runs's Service, never through the Temporal client or its
// services (see TestHandlersKnowNoTemporal).
var httpLayer = []string{"api", "api/..."}

// temporalImport reports whether an import path is Temporal's: its SDK
// (client, converter, temporal) or its API (the service, its errors and
// protobuf types).
func temporalImport(imp string) bool {
	return strings.HasPrefix(imp, "go.temporal.io/")
}

// TestHandlersKnowNoTemporal fails on a handler package that imports
// Temporal: the runs service is the one place that speaks to it, so the
// three APIs that run agents share one run lifecycle, and their tests can
// serve them from a fake (internal/testing/runsfake).
func TestHandlersKnowNoTemporal(t *testing.T) {
	for from, imports := range moduleImports(t) {
		if !matchAny([][]string{httpLayer}, from) {
			continue
		}
		for _, imp := range imports {
			if temporalImport(imp) {
				t.Errorf("%s imports %s: a handler reaches runs through internal/runs's Service", from, imp)
			}
		}
	}
}

// TestLayersRefuse proves the table catches the upward imports the
// layering removed, and a production package reaching for a test double.
func TestLayersRefuse(t *testing.T) {
	for _, c := range []struct{ from, to string }{
		{"api", "activities"},
		{"api", "workflows"},
		{"contract", "activities"},
		{"internal/tools", "skills"},
		{"internal/mcp", "skills"},
		{"internal/store", "contract"},
		{"workflows", "internal/store"},
		{"api", "internal/testing/llmtest"},
		{"cmd/longhaul", "internal/testing/testenv"},
		{"api/documents", "api"},
		{"api/account", "internal/runs"},
		{"api/account", "activities"},
		{"api/documents", "workflows"},
		{"api/web", "internal/runs"},
		{"api/sse", "internal/runs"},
		{"api/runsapi", "api"},
		{"api/runsapi", "workflows"},
		{"api/runsapi", "internal/toolset"},
		{"api/runweb", "api/runsapi"},
		{"api/responsesapi", "api/documents"},
		{"api/chatapi", "api"},
		{"api/chatapi", "api/runsapi"},
		{"api/chatapi", "activities"},
		{"api/documents", "api/chatapi"},
		{"api/responsesapi", "api"},
		{"api/runweb", "api"},
		{"internal/runs", "api"},
		{"internal/runs", "workflows"},
		{"internal/runs", "activities"},
	} {
		if ok, known := allowed(c.from, c.to); ok || !known {
			t.Errorf("allowed(%s, %s) = %v, %v; want refused", c.from, c.to, ok, known)
		}
	}
	// Process wiring lives in cmd/: a wiring package under internal/ has no
	// layer.
	if _, known := allowed("internal/command", "api"); known {
		t.Error("internal/command has a layer; wiring belongs in cmd/longhaul")
	}
	for _, imp := range []string{"go.temporal.io/sdk/client", "go.temporal.io/api/workflowservice/v1", "go.temporal.io/api/serviceerror"} {
		if !temporalImport(imp) {
			t.Errorf("temporalImport(%s) = false; a handler could import it", imp)
		}
	}
	if ok, _ := allowed("api", "contract"); !ok {
		t.Error("api may not import contract")
	}
}
