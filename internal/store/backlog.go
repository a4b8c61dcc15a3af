package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// The backlog keeps each user's open items — things to do, to follow up,
// to decide — across conversations, for the backlog_manager skill's tools.
// An item's id is a number counted per user from 1, so one user's ids say
// nothing about another's, and every read and write is keyed by the user:
// another user's id is simply not found. Both backends share one
// implementation; the backlog's tables keep times as Unix microseconds on
// both.

// DefaultMaxBacklogItems is the most open items one user's backlog holds
// unless WithMaxBacklogItems says otherwise (LONGHAUL_MAX_BACKLOG_ITEMS).
const DefaultMaxBacklogItems = 200

// Limits on an item's text, in characters (runes).
const (
	MaxBacklogTitle = 200
	MaxBacklogNotes = 2000
)

// MaxBacklogList is the most items one BacklogItems call returns.
const MaxBacklogList = 100

// The statuses of a backlog item: open and in_progress are active; done and
// wont_do are closed.
const (
	BacklogOpen       = "open"
	BacklogInProgress = "in_progress"
	BacklogDone       = "done"
	BacklogWontDo     = "wont_do"
)

// BacklogStatuses are the statuses an item may have, active first.
var BacklogStatuses = []string{BacklogOpen, BacklogInProgress, BacklogDone, BacklogWontDo}

// BacklogPriorities are the priorities an item may have, highest first.
var BacklogPriorities = []string{"high", "normal", "low"}

// The filters of BacklogQuery.Status beside the statuses themselves.
const (
	BacklogActive = "active" // open and in_progress (the default)
	BacklogClosed = "closed" // done and wont_do
	BacklogAll    = "all"
)

var (
	// ErrNoBacklogItem is returned when the user has no item with the id.
	ErrNoBacklogItem = errors.New("backlog item not found")
	// ErrBacklogFull is returned by AddBacklogItem (and by an update that
	// reopens an item) when the user already has the most active items
	// allowed.
	ErrBacklogFull = errors.New("backlog is full")
	// ErrInvalidBacklogItem is wrapped by the refusals of an item's
	// fields: empty or too long text, an unknown status or priority.
	ErrInvalidBacklogItem = errors.New("invalid backlog item")
)

// BacklogItem is one item of a user's backlog.
type BacklogItem struct {
	User string
	// ID is the item's number in the user's backlog, from 1; AddBacklogItem
	// sets it.
	ID       int64
	Title    string
	Notes    string
	Priority string // high, normal (the default) or low
	Status   string // open (the default), in_progress, done or wont_do
	// Chat and Run are the chat and run that added the item: deleting the
	// chat deletes the items it added.
	Chat      string
	Run       string
	CreatedAt time.Time
	UpdatedAt time.Time
	// ClosedAt is when the item was last closed; zero while it is active.
	ClosedAt time.Time
}

// Closed reports whether the item is done or won't be done.
func (it BacklogItem) Closed() bool { return closedStatus(it.Status) }

func closedStatus(s string) bool { return s == BacklogDone || s == BacklogWontDo }

// BacklogQuery says which of a user's items BacklogItems returns.
type BacklogQuery struct {
	// Status is a status, or BacklogActive (also ""), BacklogClosed or
	// BacklogAll.
	Status string
	// Text, when not empty, keeps the items whose title or notes contain
	// it, ignoring case.
	Text string
	// Limit is the most items returned: 1 to MaxBacklogList; 0 means
	// MaxBacklogList.
	Limit int
}

// BacklogPatch is an update of an item: each field that is not nil
// replaces the item's.
type BacklogPatch struct {
	Title, Notes, Priority, Status *string
}

// Backlog keeps users' backlogs.
type Backlog interface {
	// AddBacklogItem adds an item to it.User's backlog and returns it with
	// its ID and times. key, when not empty, makes the add idempotent: a
	// second add with the same user and key (a retried tool call) returns
	// the item the first one added and changes nothing. An add beyond the
	// cap of active items is ErrBacklogFull.
	AddBacklogItem(ctx context.Context, it BacklogItem, key string) (BacklogItem, error)
	// BacklogItems returns up to q.Limit of the user's items that match q —
	// active ones by priority then id, closed ones most recently closed
	// first — and how many match in all.
	BacklogItems(ctx context.Context, user string, q BacklogQuery) ([]BacklogItem, int, error)
	// GetBacklogItem returns one item of the user, or ErrNoBacklogItem.
	GetBacklogItem(ctx context.Context, user string, id int64) (BacklogItem, error)
	// UpdateBacklogItem applies p to the user's item and returns it; an
	// item the user does not have is ErrNoBacklogItem. Closing an item
	// sets ClosedAt; the user's closed items beyond the cap, least recently
	// closed first, are removed. Reopening one past the cap of active items
	// is ErrBacklogFull. Applying the same patch again changes nothing.
	UpdateBacklogItem(ctx context.Context, user string, id int64, p BacklogPatch) (BacklogItem, error)
	// DeleteUserBacklog deletes every item of the user's backlog, and its
	// numbering, and returns how many items went: the user's data deleted
	// whole (DELETE /v1/me).
	DeleteUserBacklog(ctx context.Context, user string) (int64, error)
}

// WithMaxBacklogItems sets the most active (open or in progress) items one
// user's backlog holds, and the most closed items it keeps
// (LONGHAUL_MAX_BACKLOG_ITEMS). n of zero or less keeps
// DefaultMaxBacklogItems.
func WithMaxBacklogItems(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBacklog = n
		}
	}
}

// normalizeBacklogItem trims the item's text, fills in the defaults and
// checks it.
func normalizeBacklogItem(it *BacklogItem) error {
	it.Title = strings.TrimSpace(it.Title)
	it.Notes = strings.TrimSpace(it.Notes)
	it.Priority = strings.ToLower(strings.TrimSpace(it.Priority))
	it.Status = strings.ToLower(strings.TrimSpace(it.Status))
	if it.Priority == "" {
		it.Priority = "normal"
	}
	if it.Status == "" {
		it.Status = BacklogOpen
	}
	switch {
	case it.Title == "":
		return fmt.Errorf("%w: the title is empty", ErrInvalidBacklogItem)
	case utf8.RuneCountInString(it.Title) > MaxBacklogTitle:
		return fmt.Errorf("%w: the title is %d characters, over the limit of %d", ErrInvalidBacklogItem, utf8.RuneCountInString(it.Title), MaxBacklogTitle)
	case utf8.RuneCountInString(it.Notes) > MaxBacklogNotes:
		return fmt.Errorf("%w: the notes are %d characters, over the limit of %d", ErrInvalidBacklogItem, utf8.RuneCountInString(it.Notes), MaxBacklogNotes)
	case !slices.Contains(BacklogPriorities, it.Priority):
		return fmt.Errorf("%w: priority %q is not one of %s", ErrInvalidBacklogItem, it.Priority, strings.Join(BacklogPriorities, ", "))
	case !slices.Contains(BacklogStatuses, it.Status):
		return fmt.Errorf("%w: status %q is not one of %s", ErrInvalidBacklogItem, it.Status, strings.Join(BacklogStatuses, ", "))
	}
	for _, f := range []struct{ field, value string }{{"title", it.Title}, {"notes", it.Notes}, {"chat", it.Chat}, {"run", it.Run}} {
		if !sqldb.ValidText(f.value) {
			return fmt.Errorf("%w: the %s is not UTF-8 text without NUL", ErrInvalidBacklogItem, f.field)
		}
	}
	return nil
}

const backlogColumns = `id, title, notes, priority, status, chat_id, run_id, created_at, updated_at, closed_at`

func scanBacklogItem(scan func(dest ...any) error, user string) (BacklogItem, error) {
	it := BacklogItem{User: user}
	var created, updated, closed int64
	if err := scan(&it.ID, &it.Title, &it.Notes, &it.Priority, &it.Status, &it.Chat, &it.Run, &created, &updated, &closed); err != nil {
		return BacklogItem{}, err
	}
	it.CreatedAt, it.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	if closed != 0 {
		it.ClosedAt = time.UnixMicro(closed).UTC()
	}
	return it, nil
}

func closedMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// backlogImpl is the backlog, on the store's database.
type backlogImpl struct {
	db   *sqldb.DB
	opts options
}

func (b backlogImpl) max() int {
	if b.opts.maxBacklog > 0 {
		return b.opts.maxBacklog
	}
	return DefaultMaxBacklogItems
}

// lockUser takes the user's row of backlog_counters (made on first use) for
// the transaction, so one user's adds and reopens take turns, and returns
// the last id given out.
func lockUser(ctx context.Context, tx sqldb.Querier, user string) (int64, error) {
	var last int64
	err := tx.QueryRowContext(ctx,
		`INSERT INTO backlog_counters (user_key, last_id) VALUES (?, 0)
		 ON CONFLICT (user_key) DO UPDATE SET last_id = backlog_counters.last_id RETURNING last_id`,
		user).Scan(&last)
	return last, err
}

func countActive(ctx context.Context, tx sqldb.Querier, user string) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM backlog_items WHERE user_key = ? AND status IN (?, ?)`,
		user, BacklogOpen, BacklogInProgress).Scan(&n)
	return n, err
}

func getItem(ctx context.Context, tx sqldb.Querier, user string, id int64) (BacklogItem, error) {
	it, err := scanBacklogItem(func(dest ...any) error {
		return tx.QueryRowContext(ctx, `SELECT `+backlogColumns+` FROM backlog_items WHERE user_key = ? AND id = ?`, user, id).Scan(dest...)
	}, user)
	if errors.Is(err, sql.ErrNoRows) {
		return BacklogItem{}, fmt.Errorf("backlog item %d: %w", id, ErrNoBacklogItem)
	}
	if err != nil {
		return BacklogItem{}, fmt.Errorf("backlog item %d: %w", id, err)
	}
	return it, nil
}

func (b backlogImpl) AddBacklogItem(ctx context.Context, it BacklogItem, key string) (BacklogItem, error) {
	if it.User == "" || !sqldb.ValidText(it.User) || !sqldb.ValidText(key) {
		return BacklogItem{}, fmt.Errorf("%w: no valid user or key", ErrInvalidBacklogItem)
	}
	if err := normalizeBacklogItem(&it); err != nil {
		return BacklogItem{}, err
	}
	if closedStatus(it.Status) {
		return BacklogItem{}, fmt.Errorf("%w: a new item is open or in_progress", ErrInvalidBacklogItem)
	}
	var out BacklogItem
	err := b.db.Write(ctx, func(tx sqldb.Tx) error {
		last, err := lockUser(ctx, tx, it.User)
		if err != nil {
			return err
		}
		if key != "" {
			var id int64
			err := tx.QueryRowContext(ctx, `SELECT id FROM backlog_items WHERE user_key = ? AND add_key = ?`, it.User, key).Scan(&id)
			if err == nil {
				out, err = getItem(ctx, tx, it.User, id)
				return err
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		n, err := countActive(ctx, tx, it.User)
		if err != nil {
			return err
		}
		if n >= b.max() {
			return fmt.Errorf("%w: %d active items, the most one backlog holds; close some first", ErrBacklogFull, n)
		}
		now := timestamp(b.opts.now())
		it.ID, it.CreatedAt, it.UpdatedAt, it.ClosedAt = last+1, now, now, time.Time{}
		if _, err := tx.ExecContext(ctx, `UPDATE backlog_counters SET last_id = ? WHERE user_key = ?`, it.ID, it.User); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO backlog_items (user_key, id, title, notes, priority, status, chat_id, run_id, add_key, created_at, updated_at, closed_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
			it.User, it.ID, it.Title, it.Notes, it.Priority, it.Status, it.Chat, it.Run, key, now.UnixMicro(), now.UnixMicro()); err != nil {
			return err
		}
		out = it
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrBacklogFull) || errors.Is(err, ErrNoBacklogItem) {
			return BacklogItem{}, err
		}
		return BacklogItem{}, fmt.Errorf("add backlog item: %w", err)
	}
	return out, nil
}

func (b backlogImpl) GetBacklogItem(ctx context.Context, user string, id int64) (BacklogItem, error) {
	if !sqldb.ValidText(user) || id <= 0 {
		return BacklogItem{}, fmt.Errorf("backlog item %d: %w", id, ErrNoBacklogItem)
	}
	return getItem(ctx, b.db.Reader(), user, id)
}

func (b backlogImpl) BacklogItems(ctx context.Context, user string, q BacklogQuery) ([]BacklogItem, int, error) {
	out := []BacklogItem{}
	limit := q.Limit
	if limit <= 0 || limit > MaxBacklogList {
		limit = MaxBacklogList
	}
	var statuses []string
	switch st := strings.ToLower(strings.TrimSpace(q.Status)); st {
	case "", BacklogActive:
		statuses = []string{BacklogOpen, BacklogInProgress}
	case BacklogClosed:
		statuses = []string{BacklogDone, BacklogWontDo}
	case BacklogAll:
		statuses = BacklogStatuses
	default:
		if !slices.Contains(BacklogStatuses, st) {
			return nil, 0, fmt.Errorf("%w: status filter %q is not one of %s, %s, %s, %s", ErrInvalidBacklogItem, q.Status,
				strings.Join(BacklogStatuses, ", "), BacklogActive, BacklogClosed, BacklogAll)
		}
		statuses = []string{st}
	}
	if !sqldb.ValidText(user) {
		return out, 0, nil
	}
	// A user has at most twice the cap of items (active ones up to it,
	// closed ones trimmed to it), so reading them all and filtering the
	// text here is bounded, and matches case the same way on both
	// backends (SQLite's lower() knows only ASCII).
	args := []any{user}
	for _, s := range statuses {
		args = append(args, s)
	}
	rs, err := b.db.Reader().QueryContext(ctx, `SELECT `+backlogColumns+` FROM backlog_items WHERE user_key = ? AND status IN (`+
		sqldb.Placeholders(len(statuses))+`)`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list backlog: %w", err)
	}
	defer rs.Close()
	needle := strings.ToLower(strings.TrimSpace(q.Text))
	for rs.Next() {
		it, err := scanBacklogItem(rs.Scan, user)
		if err != nil {
			return nil, 0, fmt.Errorf("list backlog: %w", err)
		}
		if needle != "" && !strings.Contains(strings.ToLower(it.Title+"\n"+it.Notes), needle) {
			continue
		}
		out = append(out, it)
	}
	if err := rs.Err(); err != nil {
		return nil, 0, fmt.Errorf("list backlog: %w", err)
	}
	slices.SortFunc(out, compareBacklogItems)
	total := len(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, total, nil
}

// compareBacklogItems orders active items before closed ones; active ones
// by priority, then id; closed ones most recently closed first.
func (b backlogImpl) DeleteUserBacklog(ctx context.Context, user string) (int64, error) {
	var n int64
	err := b.db.Write(ctx, func(tx sqldb.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM backlog_items WHERE user_key = ?`, user)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM backlog_counters WHERE user_key = ?`, user)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete backlog: %w", err)
	}
	return n, nil
}

func compareBacklogItems(a, b BacklogItem) int {
	if a.Closed() != b.Closed() {
		if a.Closed() {
			return 1
		}
		return -1
	}
	if a.Closed() {
		return cmp.Or(b.ClosedAt.Compare(a.ClosedAt), cmp.Compare(b.ID, a.ID))
	}
	return cmp.Or(cmp.Compare(slices.Index(BacklogPriorities, a.Priority), slices.Index(BacklogPriorities, b.Priority)),
		cmp.Compare(a.ID, b.ID))
}

func (b backlogImpl) UpdateBacklogItem(ctx context.Context, user string, id int64, p BacklogPatch) (BacklogItem, error) {
	if !sqldb.ValidText(user) || id <= 0 {
		return BacklogItem{}, fmt.Errorf("backlog item %d: %w", id, ErrNoBacklogItem)
	}
	var out BacklogItem
	err := b.db.Write(ctx, func(tx sqldb.Tx) error {
		if _, err := lockUser(ctx, tx, user); err != nil {
			return err
		}
		it, err := getItem(ctx, tx, user, id)
		if err != nil {
			return err
		}
		was := it
		for _, f := range []struct {
			to   *string
			from *string
		}{{&it.Title, p.Title}, {&it.Notes, p.Notes}, {&it.Priority, p.Priority}, {&it.Status, p.Status}} {
			if f.from != nil {
				*f.to = *f.from
			}
		}
		if err := normalizeBacklogItem(&it); err != nil {
			return err
		}
		if it == was {
			out = it
			return nil // nothing changes (a retried update)
		}
		now := timestamp(b.opts.now())
		it.UpdatedAt = now
		switch {
		case it.Closed() && !was.Closed():
			it.ClosedAt = now
		case !it.Closed() && was.Closed():
			n, err := countActive(ctx, tx, user)
			if err != nil {
				return err
			}
			if n >= b.max() {
				return fmt.Errorf("%w: %d active items, the most one backlog holds; close some before reopening %d", ErrBacklogFull, n, id)
			}
			it.ClosedAt = time.Time{}
		}
		if _, err := tx.ExecContext(ctx,
			`UPDATE backlog_items SET title = ?, notes = ?, priority = ?, status = ?, updated_at = ?, closed_at = ?
			 WHERE user_key = ? AND id = ?`,
			it.Title, it.Notes, it.Priority, it.Status, it.UpdatedAt.UnixMicro(), closedMicros(it.ClosedAt), user, id); err != nil {
			return err
		}
		if it.Closed() && !was.Closed() {
			// Closed items are kept for a while, not for ever: the cap
			// bounds them too.
			if _, err := tx.ExecContext(ctx,
				`DELETE FROM backlog_items WHERE user_key = ? AND status IN (?, ?) AND id NOT IN (
					SELECT id FROM backlog_items WHERE user_key = ? AND status IN (?, ?)
					ORDER BY closed_at DESC, id DESC LIMIT ?)`,
				user, BacklogDone, BacklogWontDo, user, BacklogDone, BacklogWontDo, b.max()); err != nil {
				return err
			}
		}
		out = it
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrBacklogFull) || errors.Is(err, ErrNoBacklogItem) || errors.Is(err, ErrInvalidBacklogItem) {
			return BacklogItem{}, err
		}
		return BacklogItem{}, fmt.Errorf("update backlog item %d: %w", id, err)
	}
	return out, nil
}
