// Package bench measures Longhaul on the machine it runs on. `make bench`
// runs it against bin/longhaul.
//
// BenchmarkEngine (Linux only: it reads /proc) runs `longhaul dev` as a
// child process, so the CPU time and memory it reports are the engine's
// alone; the benchmark process runs the scripted model and the clients. It
// prints:
//
//   - the overhead of a sequential non-streaming turn, of the time to a
//     stream's response headers and of the time to its first token,
//     against the same scripted model called directly, and the time to
//     the headers when the model takes 1 s to its first token (they must
//     not wait for it);
//   - concurrent streaming chats (20 tokens/s for 10 s each) at several
//     levels, arriving steadily (one every 10 s / N), as a burst and, where
//     steady is not that already, at 100/s (one every 10 ms, the rate of
//     the targets): errors (and of them the 429s of a full
//     admission queue), time to headers, TTFT and duration p50/p99, the
//     child's CPU seconds and peak RSS;
//   - the history events of a short turn and of a 10 s and a 60 s streamed
//     turn.
//
// BenchmarkCluster (Linux only; `make bench-cluster`, which sets
// LONGHAUL_BENCH_CLUSTER=1: without it the benchmark skips, so make bench
// does not spend its minutes) runs the same concurrent streams against the
// scaled-out shape: temporal-server, built from go.mod's
// go.temporal.io/server, on the PostgreSQL of LONGHAUL_TEST_POSTGRES_URL
// (make bench-cluster starts a throwaway one), its schema set up with
// temporal-sql-tool and its settings (history shards, dynamic config)
// those of docker-compose.yml's temporal service, as test/stack runs them;
// Debian's nats-server; `longhaul setup`; then one, two and four `longhaul
// worker`s in turn (LONGHAUL_BENCH_WORKERS), and two `longhaul api`s over
// which the clients spread their streams, each a child process, the
// scripted model in the benchmark process. It prints, per configuration
// and level (default 100,500,1000, arriving at 100/s; LONGHAUL_BENCH_ARRIVALS
// adds steady and burst as above): turns per second (completed streams over
// the level's wall time), TTFT p50/p99, errors, the CPU milliseconds per
// completed turn of each process (Temporal, PostgreSQL with its backends
// when it runs on this machine, each worker, each API, NATS) and the peak
// of PostgreSQL connections to the cluster's databases (pg_stat_activity);
// and each process's CPU use at rest. test/benchbox packs it, with every
// binary it runs, for a machine without Go, PostgreSQL or NATS.
//
// BenchmarkWrites counts what one chat turn costs the embedded Temporal's
// persistence, from the server's own metrics (`longhaul dev` with
// LONGHAUL_EMBEDDED_METRICS_ADDR): its persistence and visibility requests
// by operation, per short turn and per 10 s streamed turn (20 of each,
// less what the idle server does meanwhile), and each kind of turn's
// history events and bytes. They are counts, so a loaded machine changes
// them little.
//
// BenchmarkCeiling finds the engine's ceiling in turns a second: N
// clients send short, non-streamed turns back to back for 30 s through
// the same `longhaul dev` child, at each N of LONGHAUL_BENCH_CLIENTS,
// and it prints the turns completed a second, their latency p50/p99,
// errors, and the child's CPU per turn and peak memory. With
// LONGHAUL_EMBEDDED_DATABASE_URL set (inherited by the child) it
// measures the embedded Temporal on PostgreSQL instead of SQLite.
//
// BenchmarkRestore measures what restoring a 50-turn chat (every turn with
// a tool call) adds to a turn: the RestoreConversation activity alone on
// SQLite and PostgreSQL, and the 51st turn through the API with the chat id
// (restored and recorded) against the same request without one.
//
// BenchmarkContext measures what fitting every model call into its
// model's window costs: counting the assistant's real request (its
// prompt, its tools and a new 16,000-character page) against a turn's
// overhead measured in the same run, and what one compaction of a
// 41-message chat adds to a turn in a 4,096-token window.
//
// BenchmarkLongRun runs one long research run in process and prints the
// history bytes each turn adds.
//
// BenchmarkMemoryRecall times the store's search of a memory recall for
// one user with 1k, 10k and 100k memories (and as many of another user),
// on SQLite (exact cosine in Go) and on pgvector's HNSW index (PGlite
// started from test/pglite), and prints load time and search p50 / p99.
//
// BenchmarkDocSearch loads a generated corpus (3,000 chunks of about 800
// tokens, ≈ 2,400 pages, with 768-dimension vectors clustered round 40
// topics) into the document store on SQLite (exact cosine in Go, FTS5) and
// on pgvector (PGlite: HNSW, tsvector), and prints load time, vector and
// hybrid search p50 / p99, and recall@10 of each store's vector ranking
// against exact search over the same vectors; then SQLite's exact-search
// ceiling, vector search p50 / p99 at 10k and 100k chunks.
//
// BenchmarkIngest generates a corpus of PDFs of prose (fpdf) and ingests
// it through the IngestFile workflow on the real embedded Temporal, all
// files at once, with the scripted model's embeddings, and prints pages
// and chunks per second and the history bytes of one file's ingestion.
//
// Settings, all optional:
//
//	LONGHAUL_BENCH_BIN      the longhaul binary to run (make bench passes
//	                        bin/longhaul); unset, one is built into a
//	                        temporary directory
//	LONGHAUL_BENCH_LEVELS   comma-separated numbers of concurrent streams
//	                        (default 100,250,500,1000; BenchmarkCluster's
//	                        100,500,1000)
//	LONGHAUL_BENCH_CLIENTS  BenchmarkCeiling's numbers of clients, in turn
//	                        (default 16,64)
//	LONGHAUL_BENCH_WORKERS  BenchmarkCluster's numbers of workers, in turn
//	                        (default 1,2,4)
//	LONGHAUL_BENCH_ARRIVALS BenchmarkCluster's arrivals, of steady, burst
//	                        and 100/s (default 100/s)
//	LONGHAUL_BENCH_TEMPORAL_DIR  a directory holding temporal-server,
//	                        temporal-sql-tool and schema/ (test/benchbox),
//	                        instead of building them
//	LONGHAUL_BENCH_CLUSTER  1 runs BenchmarkCluster (make bench-cluster)
//	LONGHAUL_BENCH_SAMPLES  sequential samples per latency row (default 200)
//	LONGHAUL_BENCH_LONG     0 skips the 60 s streamed turn (its history row)
//	LONGHAUL_BENCH_OUT      also write the tables, as Markdown, to this file
//	LONGHAUL_BENCH_PROFILE  a directory: the child serves its profiles
//	                        (LONGHAUL_PPROF_ADDR on a free loopback port)
//	                        and each level's arrival writes there the CPU,
//	                        block and mutex profiles of the child over it
//	                        and its heap at its end, as
//	                        <streams>-<arrival>.{cpu,block,mutex,heap}.pprof
//	                        (a level named again, as in a soak, adds its
//	                        round: 300-steady-2.heap.pprof; read them with
//	                        go tool pprof -top, and what grew with -base);
//	                        BenchmarkCeiling's levels write
//	                        ceiling-<clients>.{cpu,block,mutex,heap}.pprof
//	                        over each level's first 20 s
//	LONGHAUL_BENCH_KEEP     1 keeps the child's data directory and log, and
//	                        BenchmarkCluster's logs (they are kept anyway
//	                        when the benchmark fails)
//	LONGHAUL_BENCH_TURNS    BenchmarkLongRun's tool turns (default 200)
//	LONGHAUL_BENCH_MEMORIES BenchmarkMemoryRecall's sizes (default
//	                        1000,10000,100000)
//	LONGHAUL_BENCH_MEMORY_DIM  its vector length (default 768)
//	LONGHAUL_BENCH_MEMORY_BACKENDS  its backends (default sqlite,pgvector;
//	                        pgvector on PGlite builds its HNSW index in
//	                        WebAssembly: 10k memories take minutes to load)
//	LONGHAUL_BENCH_DOC_CHUNKS  BenchmarkDocSearch's chunks (default 3000)
//	LONGHAUL_BENCH_DOC_DIM  their vector length (default 768)
//	LONGHAUL_BENCH_DOC_BACKENDS  its backends (default sqlite,pgvector)
//	LONGHAUL_BENCH_DOC_CEILING  the sizes of its SQLite exact-search
//	                        ceiling (default 10000,100000; 0 skips it)
//	LONGHAUL_BENCH_INGEST_PAGES  BenchmarkIngest's pages in all (default
//	                        1000)
//	LONGHAUL_BENCH_INGEST_FILES  the files they are cut into (default 10)
//
// Every other LONGHAUL_ variable in the environment reaches the child, so a
// setting under test needs no change here; the benchmark's own settings
// (data directory, addresses, model URL, log level, no API keys) win over
// them.
package bench
