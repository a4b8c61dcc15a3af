package api

import (
	"sync"
	"time"
)

// Limits bound what one principal holds at once. Zero is no limit. Runs
// and Streams bound runs and their streams, which the runs package's Gate
// enforces (runs.Limits); the rest bound a principal's files.
type Limits struct {
	// Runs is the most runs a principal may have running (or waiting) at
	// once, across every API process (see runs.Limits).
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
	// Schedules is the most schedules a principal may have: a new one
	// beyond it is refused with 403 quota_exceeded.
	Schedules int
	// MinScheduleInterval is the least time between two fires of a
	// schedule: a schedule that would fire more often is a 400.
	MinScheduleInterval time.Duration
}

// streamCounter counts the places each key holds (see take).
type streamCounter struct {
	mu   sync.Mutex
	open map[string]int
}
