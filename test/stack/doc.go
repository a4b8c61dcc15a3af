// Package stack proves the stack docker-compose.yml describes without
// Docker: TestComposeStack loads the compose file with the Compose v2
// loader (compose-go, the library `docker compose` uses) and .env.example's
// settings (its change-me secrets replaced, as a user does), then runs what
// the containers run, as child processes on the test's loopback: Temporal's
// schema setup (temporal-sql-tool) and server (temporal-server), built from
// the go.temporal.io/server of go.mod, with exactly the environment the
// compose file gives them and its dynamic-config mount; the namespace;
// `longhaul setup`, two workers and the API with the compose file's
// LONGHAUL_* settings; Debian's nats-server with the compose file's
// command and token; the scripted model in place of Ollama. Only addresses
// change (service:port becomes a loopback address). A streamed chat as
// Open WebUI sends it (the open-webui service's key and secret) must
// answer, and the server must exit without its dynamic-config mount, as the
// image does.
//
// It needs a PostgreSQL of its own (LONGHAUL_TEST_POSTGRES_URL; make test
// starts a throwaway one) and nats-server (make test-deps); without the
// URL it is skipped, or fails when CI is set.
package stack
