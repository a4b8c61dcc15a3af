# Longhaul. `make run` and `make test` are all a new machine needs: Go
# fetches the modules; nothing else is installed by hand.

GO          ?= go
BIN         := bin/longhaul
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0
# -race roughly doubles the test time and the first build; it is worth it.
TESTFLAGS   ?= -race -count=1 -timeout 30m
BENCHFLAGS  ?= -run '^$$' -bench . -benchtime 1x -timeout 60m

.PHONY: all build run test chaos lint bench clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN) ./cmd/longhaul

run: build
	./$(BIN) dev

test: test-deps
	$(GO) test $(TESTFLAGS) ./...

# The crash test (test/chaos) alone, against the binary make build ships,
# printing its figures: 50 runs through `longhaul server`, two workers, the
# API and an external NATS (Debian's nats-server) as processes, while
# workers and NATS are killed with SIGKILL and the server and the API
# restart. make test runs it too (with -race).
chaos: build test-deps
	LONGHAUL_CHAOS_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -v -timeout 20m -run '^TestChaos$$' ./test/chaos/

# The reference MCP servers internal/mcp tests against, pinned by
# test/mcp/package-lock.json and installed again only when the lock file is
# newer; Debian's nats-server, the external NATS of test/streaming and
# test/chaos; and Debian's docker-compose, whose `config` (no daemon
# needed) deploy/ checks docker-compose.yml with.
.PHONY: test-deps
test-deps: test/mcp/node_modules
	@command -v nats-server >/dev/null || test -x /usr/sbin/nats-server || { apt-get update -qq && apt-get install -y -qq nats-server; }
	@command -v docker-compose >/dev/null || { apt-get update -qq && apt-get install -y -qq docker-compose; }

test/mcp/node_modules: test/mcp/package-lock.json
	@command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm; }
	npm ci --prefix test/mcp --no-audit --no-fund
	@touch $@

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(WORKFLOWCHECK) -config workflowcheck.config.yaml ./workflows/...

# The benchmarks (see bench/doc.go for LONGHAUL_BENCH_* settings), against
# the binary make build ships, run as a child process.
bench: build
	LONGHAUL_BENCH_BIN=$(CURDIR)/$(BIN) $(GO) test $(BENCHFLAGS) ./bench/

clean:
	rm -rf bin
