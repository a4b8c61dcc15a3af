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
//     levels, arriving steadily (one every 10 s / N) and as a burst: errors,
//     time to headers, TTFT and duration p50/p99, the child's CPU seconds
//     and peak RSS;
//   - the history events of a short turn and of a 10 s and a 60 s streamed
//     turn.
//
// BenchmarkRestore measures what restoring a 50-turn chat (every turn with
// a tool call) adds to a turn: the RestoreConversation activity alone on
// SQLite and PostgreSQL, and the 51st turn through the API with the chat id
// (restored and recorded) against the same request without one.
//
// BenchmarkLongRun runs one long research run in process and prints the
// history bytes each turn adds.
//
// BenchmarkMemoryRecall times the store's search of a memory recall for
// one user with 1k, 10k and 100k memories (and as many of another user),
// on SQLite (exact cosine in Go) and on pgvector's HNSW index (PGlite
// started from test/pglite), and prints load time and search p50 / p99.
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
//	                        (default 100,250,500,1000)
//	LONGHAUL_BENCH_SAMPLES  sequential samples per latency row (default 200)
//	LONGHAUL_BENCH_LONG     0 skips the 60 s streamed turn (its history row)
//	LONGHAUL_BENCH_OUT      also write the tables, as Markdown, to this file
//	LONGHAUL_BENCH_KEEP     1 keeps the child's data directory and log (they
//	                        are kept anyway when the benchmark fails)
//	LONGHAUL_BENCH_TURNS    BenchmarkLongRun's tool turns (default 200)
//	LONGHAUL_BENCH_MEMORIES BenchmarkMemoryRecall's sizes (default
//	                        1000,10000,100000)
//	LONGHAUL_BENCH_MEMORY_DIM  its vector length (default 768)
//	LONGHAUL_BENCH_MEMORY_BACKENDS  its backends (default sqlite,pgvector;
//	                        pgvector on PGlite builds its HNSW index in
//	                        WebAssembly: 10k memories take minutes to load)
//	LONGHAUL_BENCH_INGEST_PAGES  BenchmarkIngest's pages in all (default
//	                        1000)
//	LONGHAUL_BENCH_INGEST_FILES  the files they are cut into (default 10)
//
// Every other LONGHAUL_ variable in the environment reaches the child, so a
// setting under test needs no change here; the benchmark's own settings
// (data directory, addresses, model URL, log level, no API keys) win over
// them.
package bench
