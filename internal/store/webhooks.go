package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// ErrNoWebhook is returned by GetWebhook when no webhook has the id.
var ErrNoWebhook = errors.New("no such webhook")

// ErrWebhookLimit is returned by CreateWebhook when the owner already has
// as many subscriptions as the cap allows.
var ErrWebhookLimit = errors.New("too many webhooks")

// Webhook is where a principal's run events are delivered: a
// subscription (Run empty), or the webhook one run was started with (Run
// is its id). Secret signs every delivery; the store keeps it as given
// so that the delivery activity can sign with it, and hands it out only
// through GetWebhook, which the API never answers with.
type Webhook struct {
	ID     string
	Owner  string // the principal's user key
	URL    string
	Events []string // the event types delivered, in the order given
	Secret string   // "whsec_…"; empty in ListWebhooks results
	Run    string
	// CreatedAt is set by CreateWebhook: UTC, microsecond precision.
	CreatedAt time.Time
}

// Delivery is one attempt to deliver one event to one webhook.
type Delivery struct {
	Webhook   string
	EventID   string // the webhook-id header: the same on every attempt
	EventType string
	Attempt   int
	// StatusCode is the receiver's answer, 0 when none came (Error says
	// why).
	StatusCode int
	Error      string
	At         time.Time // set by AddDelivery
}

// Webhooks keeps webhooks and their delivery attempts; one conformance
// suite runs against each database.
type Webhooks interface {
	// CreateWebhook stores w (ID, Owner, URL and Secret set). A
	// subscription (no Run) is refused with ErrWebhookLimit when its owner
	// has max of them already; max of zero or less is no cap.
	CreateWebhook(ctx context.Context, w Webhook, max int) (Webhook, error)
	// GetWebhook returns the webhook with its secret, or an error wrapping
	// ErrNoWebhook.
	GetWebhook(ctx context.Context, id string) (Webhook, error)
	// ListWebhooks returns the owner's subscriptions without their
	// secrets, oldest first.
	ListWebhooks(ctx context.Context, owner string) ([]Webhook, error)
	// DeleteWebhook removes the owner's webhook and its deliveries and
	// reports whether there was one.
	DeleteWebhook(ctx context.Context, owner, id string) (bool, error)
	// MatchWebhooks returns the ids of the owner's subscriptions that take
	// events of eventType, oldest first.
	MatchWebhooks(ctx context.Context, owner, eventType string) ([]string, error)
	// RunWebhooks returns the owner's webhooks of run (Run is run): the
	// one it was started with and those added while it ran, oldest first,
	// without their secrets.
	RunWebhooks(ctx context.Context, owner, run string) ([]Webhook, error)
	// AddDelivery records one attempt.
	AddDelivery(ctx context.Context, d Delivery) error
	// ListDeliveries returns the webhook's latest attempts, at most limit,
	// newest first.
	ListDeliveries(ctx context.Context, webhook string, limit int) ([]Delivery, error)
	// DeleteUserWebhooks removes every webhook of the owner (runs' own
	// too) with their deliveries, and returns how many webhooks.
	DeleteUserWebhooks(ctx context.Context, owner string) (int64, error)
	// RunWebhooksBefore returns the runs' own webhooks (Run set) created
	// before t, oldest first, without their secrets: what the retention
	// job deletes once their runs are done.
	RunWebhooksBefore(ctx context.Context, t time.Time) ([]Webhook, error)
	// DeleteDeliveriesBefore removes the delivery records made before t,
	// of every webhook, and returns how many.
	DeleteDeliveriesBefore(ctx context.Context, t time.Time) (int64, error)
}

var _ Webhooks = (*sqlStore)(nil)

func checkWebhook(w Webhook) error {
	switch {
	case w.ID == "" || w.Owner == "" || w.URL == "" || w.Secret == "":
		return errors.New("create webhook: no id, owner, url or secret")
	case !sqldb.ValidText(w.ID) || !sqldb.ValidText(w.Owner) || !sqldb.ValidText(w.URL) || !sqldb.ValidText(w.Run):
		return errors.New("create webhook: not UTF-8 text without NUL")
	}
	for _, e := range w.Events {
		if e == "" || strings.Contains(e, ",") || !sqldb.ValidText(e) {
			return fmt.Errorf("create webhook: bad event type %q", e)
		}
	}
	return nil
}

func (s *sqlStore) CreateWebhook(ctx context.Context, w Webhook, max int) (Webhook, error) {
	if err := checkWebhook(w); err != nil {
		return Webhook{}, err
	}
	w.CreatedAt = timestamp(s.opts.now())
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		if w.Run == "" && max > 0 {
			// One owner's creates one at a time, so the cap holds.
			if err := tx.Lock(ctx, "longhaul/webhooks/"+w.Owner); err != nil {
				return err
			}
			var n int
			err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhooks WHERE user_key = ? AND run_id = ''`, w.Owner).Scan(&n)
			if err != nil {
				return err
			}
			if n >= max {
				return ErrWebhookLimit
			}
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO webhooks (id, user_key, url, events, secret, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			w.ID, w.Owner, w.URL, strings.Join(w.Events, ","), w.Secret, w.Run, s.db.Time(w.CreatedAt))
		return err
	})
	if err != nil {
		return Webhook{}, fmt.Errorf("create webhook: %w", err)
	}
	return w, nil
}

// webhookColumns are what scanWebhook reads, in its order.
const webhookColumns = `id, user_key, url, events, secret, run_id, created_at`

func scanWebhook(row interface{ Scan(...any) error }) (Webhook, error) {
	var w Webhook
	var events string
	if err := row.Scan(&w.ID, &w.Owner, &w.URL, &events, &w.Secret, &w.Run, sqldb.TimeDest(&w.CreatedAt)); err != nil {
		return Webhook{}, err
	}
	w.Events = []string{}
	if events != "" {
		w.Events = strings.Split(events, ",")
	}
	return w, nil
}

func (s *sqlStore) GetWebhook(ctx context.Context, id string) (Webhook, error) {
	if !sqldb.ValidText(id) {
		return Webhook{}, fmt.Errorf("get webhook %q: %w", id, ErrNoWebhook)
	}
	w, err := scanWebhook(s.db.Reader().QueryRowContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Webhook{}, fmt.Errorf("get webhook %q: %w", id, ErrNoWebhook)
	}
	if err != nil {
		return Webhook{}, fmt.Errorf("get webhook %q: %w", id, err)
	}
	return w, nil
}

func (s *sqlStore) subscriptions(ctx context.Context, owner string) ([]Webhook, error) {
	out := []Webhook{}
	if !sqldb.ValidText(owner) {
		return out, nil
	}
	rows, err := s.db.Reader().QueryContext(ctx,
		`SELECT `+webhookColumns+` FROM webhooks WHERE user_key = ? AND run_id = '' ORDER BY created_at, id`, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

func (s *sqlStore) RunWebhooks(ctx context.Context, owner, run string) ([]Webhook, error) {
	out := []Webhook{}
	if run == "" || !sqldb.ValidText(owner) || !sqldb.ValidText(run) {
		return out, nil
	}
	rows, err := s.db.Reader().QueryContext(ctx,
		`SELECT `+webhookColumns+` FROM webhooks WHERE user_key = ? AND run_id = ? ORDER BY created_at, id`, owner, run)
	if err != nil {
		return nil, fmt.Errorf("list the webhooks of run %q: %w", run, err)
	}
	defer rows.Close()
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, fmt.Errorf("list the webhooks of run %q: %w", run, err)
		}
		w.Secret = ""
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the webhooks of run %q: %w", run, err)
	}
	return out, nil
}

func (s *sqlStore) ListWebhooks(ctx context.Context, owner string) ([]Webhook, error) {
	ws, err := s.subscriptions(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	for i := range ws {
		ws[i].Secret = ""
	}
	return ws, nil
}

func (s *sqlStore) MatchWebhooks(ctx context.Context, owner, eventType string) ([]string, error) {
	ws, err := s.subscriptions(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("match webhooks: %w", err)
	}
	ids := []string{}
	for _, w := range ws {
		if slices.Contains(w.Events, eventType) {
			ids = append(ids, w.ID)
		}
	}
	return ids, nil
}

func (s *sqlStore) DeleteWebhook(ctx context.Context, owner, id string) (bool, error) {
	if !sqldb.ValidText(owner) || !sqldb.ValidText(id) {
		return false, nil
	}
	var n int64
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		var err error
		if n, err = sqldb.Affected(tx.ExecContext(ctx, `DELETE FROM webhooks WHERE user_key = ? AND id = ?`, owner, id)); err != nil || n == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ?`, id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("delete webhook %q: %w", id, err)
	}
	return n > 0, nil
}

func (s *sqlStore) AddDelivery(ctx context.Context, d Delivery) error {
	for _, v := range []string{d.Webhook, d.EventID, d.EventType, d.Error} {
		if !sqldb.ValidText(v) {
			return errors.New("add delivery: not UTF-8 text without NUL")
		}
	}
	_, err := s.db.Writer().ExecContext(ctx,
		`INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, attempt, status_code, error, at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		d.Webhook, d.EventID, d.EventType, d.Attempt, d.StatusCode, d.Error, s.db.Time(s.opts.now()))
	if err != nil {
		return fmt.Errorf("add delivery of %s to %s: %w", d.EventID, d.Webhook, err)
	}
	// A row per attempt, bounded: the webhook keeps its latest
	// MaxDeliveries.
	_, err = s.db.Writer().ExecContext(ctx,
		`DELETE FROM webhook_deliveries WHERE webhook_id = ? AND id <= (
		   SELECT id FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
		d.Webhook, d.Webhook, MaxDeliveries)
	if err != nil {
		return fmt.Errorf("bound the deliveries of %s: %w", d.Webhook, err)
	}
	return nil
}

// MaxDeliveries is how many delivery records (attempts) one webhook
// keeps: the latest; older ones are deleted as new ones come.
const MaxDeliveries = 100

func (s *sqlStore) ListDeliveries(ctx context.Context, webhook string, limit int) ([]Delivery, error) {
	out := []Delivery{}
	if !sqldb.ValidText(webhook) {
		return out, nil
	}
	rows, err := s.db.Reader().QueryContext(ctx,
		`SELECT event_id, event_type, attempt, status_code, error, at FROM webhook_deliveries
		 WHERE webhook_id = ? ORDER BY id DESC LIMIT ?`, webhook, max(limit, 1))
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %q: %w", webhook, err)
	}
	defer rows.Close()
	for rows.Next() {
		d := Delivery{Webhook: webhook}
		if err := rows.Scan(&d.EventID, &d.EventType, &d.Attempt, &d.StatusCode, &d.Error, sqldb.TimeDest(&d.At)); err != nil {
			return nil, fmt.Errorf("list deliveries of %q: %w", webhook, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list deliveries of %q: %w", webhook, err)
	}
	return out, nil
}

func (s *sqlStore) DeleteUserWebhooks(ctx context.Context, owner string) (int64, error) {
	if !sqldb.ValidText(owner) {
		return 0, nil
	}
	var n int64
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id IN (SELECT id FROM webhooks WHERE user_key = ?)`, owner)
		if err != nil {
			return err
		}
		n, err = sqldb.Affected(tx.ExecContext(ctx, `DELETE FROM webhooks WHERE user_key = ?`, owner))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete webhooks of a user: %w", err)
	}
	return n, nil
}

func (s *sqlStore) RunWebhooksBefore(ctx context.Context, t time.Time) ([]Webhook, error) {
	rows, err := s.db.Reader().QueryContext(ctx,
		`SELECT `+webhookColumns+` FROM webhooks WHERE run_id <> '' AND created_at < ? ORDER BY created_at, id`, s.db.Time(t))
	if err != nil {
		return nil, fmt.Errorf("list runs' webhooks before %v: %w", t, err)
	}
	defer rows.Close()
	out := []Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs' webhooks before %v: %w", t, err)
		}
		w.Secret = ""
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs' webhooks before %v: %w", t, err)
	}
	return out, nil
}

func (s *sqlStore) DeleteDeliveriesBefore(ctx context.Context, t time.Time) (int64, error) {
	n, err := sqldb.Affected(s.db.Writer().ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE at < ?`, s.db.Time(t)))
	if err != nil {
		return 0, fmt.Errorf("delete deliveries before %v: %w", t, err)
	}
	return n, nil
}
