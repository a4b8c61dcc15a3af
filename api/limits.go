package api

import (
	"context"
	"fmt"
	"sync"

	"github.com/longhaul-dev/longhaul/internal/runs"
)

// Limits bound what one principal holds at once. Zero is no limit.
type Limits struct {
	// Runs is the most runs a principal may have running (or waiting) at
	// once, across every API process: a new run beyond it is refused with
	// 429. Counted by Temporal's visibility, so a burst may overshoot by the
	// few runs visibility has not shown yet.
	Runs int
	// Streams is the most event streams (chat and runs API) a principal may
	// hold open on one API process.
	Streams int
	// Files is the most files a principal may store (uploads and chat
	// file parts): beyond it a new file is refused with 403
	// quota_exceeded (see api/documents/quota.go).
	Files int
	// FileBytes is the most bytes of files a principal may store; a file
	// that would pass it is refused with 403 quota_exceeded.
	FileBytes int64
	// Ingestions is the most files a principal may have being ingested
	// into vector stores at once: an attachment beyond it is refused with
	// 429.
	Ingestions int
}

// Retry-After values of the 429s, in seconds: a stream frees up when a
// client leaves, a run when it ends.
const (
	retryStreams = 5
	retryRuns    = 30
)

// streamCounter counts the open streams of each principal on this process.
type streamCounter struct {
	mu   sync.Mutex
	open map[string]int
}

// acquire takes one of the principal's streams, or says no: the caller must
// call the release it returns when the stream ends.
func (s *Server) acquireStream(principal string) (release func(), err error) {
	limit := s.cfg.Limits.Streams
	if limit <= 0 {
		return func() {}, nil
	}
	sc := &s.streams
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.open == nil {
		sc.open = map[string]int{}
	}
	if sc.open[principal] >= limit {
		return nil, errTooMany(fmt.Sprintf("too many open streams: at most %d at once (LONGHAUL_MAX_STREAMS)", limit), retryStreams)
	}
	sc.open[principal]++
	var once sync.Once
	return func() {
		once.Do(func() {
			sc.mu.Lock()
			defer sc.mu.Unlock()
			if sc.open[principal]--; sc.open[principal] <= 0 {
				delete(sc.open, principal)
			}
		})
	}, nil
}

// checkRuns refuses a new run of a principal who has as many running as the
// limit allows.
func (s *Server) checkRuns(ctx context.Context, principal string) error {
	limit := s.cfg.Limits.Runs
	if limit <= 0 {
		return nil
	}
	if !literalOK(principal) {
		// Counted by another's name, or by none: refuse rather than let
		// the limit count someone else's runs (see literalOK).
		return errInternal("your runs cannot be counted: your principal's name cannot be matched by a visibility query")
	}
	n, err := s.runs.Count(ctx, runningQuery(principal))
	if err != nil {
		return errUnavailable("cannot count your runs: " + err.Error())
	}
	if n >= int64(limit) {
		return errTooMany(fmt.Sprintf("too many runs: you have %d running, at most %d at once (LONGHAUL_MAX_RUNS); cancel one or wait for one to end", n, limit), retryRuns)
	}
	return nil
}

// maxRunPayload bounds the encoded input of a new run and of a person's
// input to a running one. Temporal refuses a payload over 2 MB (its default
// blob size limit) and the run hands its conversation on to its first model
// call in another payload, with the call's own fields around it: the margin
// keeps that one under the limit too.
const maxRunPayload = 3 << 19 // 1.5 MiB

// checkPayload refuses, with a 413, a value that Temporal would refuse as a
// payload (see maxRunPayload): said so at once, rather than as the 503 of a
// failed start that clients retry.
func checkPayload(what string, v any) error {
	n, err := runs.PayloadSize(v)
	if err != nil {
		return errInternal("cannot encode " + what)
	}
	if n > maxRunPayload {
		return errPayloadTooLarge(fmt.Sprintf("%s is %s encoded; a run takes at most %s at once (Temporal's payload limit): "+
			"shorten the conversation or leave the large parts out (give the agent a URL it can fetch instead of a pasted document)",
			what, megabytes(n), megabytes(maxRunPayload)))
	}
	return nil
}

func megabytes(n int) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
