package contract

// EventArchive names a stored stretch of a run's event log: the events with
// offsets From to To, both included.
type EventArchive struct {
	From int64  `json:"from"`
	To   int64  `json:"to"`
	Ref  string `json:"ref"`
}

// ArchiveKind is the store.Blob kind of an event archive.
const ArchiveKind = "events"
