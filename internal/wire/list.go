package wire

// The shapes the list and DELETE routes share; each route names its own
// alias of them (ConversationList, RunList, FileList, MemoryDeleted, …).

// List is a list answer given whole: object "list" and every item.
type List[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

// Page is one page of a list answer paged by token: NextPageToken, when
// set, is the page_token of the next page.
type Page[T any] struct {
	Object        string `json:"object"`
	Data          []T    `json:"data"`
	NextPageToken string `json:"next_page_token,omitempty"`
}

// CursorPage is a list answer in CursorPage's shape: object "list", the
// page's items, the first and last item's ids (null on an empty page) and
// whether more follow.
type CursorPage[T any] struct {
	Object  string  `json:"object"`
	Data    []T     `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// Deleted answers a DELETE: the id of what went, its object type
// ("memory.deleted", "file", …) and deleted true.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}
