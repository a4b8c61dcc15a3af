package contract

import "github.com/longhaul-dev/longhaul"

// DefaultHistoryLimit is the number of history events after which a run
// continues as new, archiving its event log first, when AgentInput leaves
// HistoryLimit zero. Temporal's own suggestion (about 4 MB or 4,000 events
// on a default server) may come first.
const DefaultHistoryLimit = 5000

// EventArchive names a stored stretch of a run's event log: the events with
// offsets From to To, both included.
type EventArchive struct {
	From int64  `json:"from"`
	To   int64  `json:"to"`
	Ref  string `json:"ref"`
}

// ArchiveKind is the store.Blob kind of an event archive.
const ArchiveKind = "events"

// ArchiveRequest is a stretch of a run's event log to keep in the blob store
// before the workflow continues as new without it.
type ArchiveRequest struct {
	Events []longhaul.Event `json:"events"`
}
