package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoCredential is returned by GetCredential when the user has no
// credential of that kind and name.
var ErrNoCredential = errors.New("no such credential")

// Credential is one secret a user gave the engine: the OAuth tokens of an
// MCP server they connected, or a named secret of their HTTP tools. Data is
// sealed by the caller (internal/usercreds encrypts it with
// LONGHAUL_TOKEN_KEY); the store never sees a plaintext secret.
type Credential struct {
	User      string    // the principal's user key; "" for pending OAuth states
	Kind      string    // e.g. "oauth", "secret", "oauth_state"
	Name      string    // the MCP server, the secret's name, the state's hash
	Data      []byte    // the sealed secret; nil in ListCredentials results
	UpdatedAt time.Time // when it was last put, UTC, microsecond precision
}

// Credentials keeps users' sealed credentials. Both backends implement it;
// one conformance suite runs against each.
type Credentials interface {
	// PutCredential stores c, replacing the user's credential of the same
	// kind and name.
	PutCredential(ctx context.Context, c Credential) error
	// GetCredential returns one credential or an error wrapping
	// ErrNoCredential.
	GetCredential(ctx context.Context, user, kind, name string) (Credential, error)
	// ListCredentials returns the user's credentials of a kind, without
	// Data, by name.
	ListCredentials(ctx context.Context, user, kind string) ([]Credential, error)
	// DeleteCredential removes one credential and reports whether there
	// was one: of two concurrent deletes, exactly one reports true, which
	// is what makes a pending OAuth state single-use.
	DeleteCredential(ctx context.Context, user, kind, name string) (bool, error)
	// DeleteUserCredentials removes every credential of the user (when the
	// user's data is deleted) and returns how many.
	DeleteUserCredentials(ctx context.Context, user string) (int64, error)
	// DeleteCredentialsBefore removes the credentials of a kind put before
	// t (expired pending states) and returns how many.
	DeleteCredentialsBefore(ctx context.Context, kind string, t time.Time) (int64, error)
}

var (
	_ Credentials = (*sqliteStore)(nil)
	_ Credentials = (*postgresStore)(nil)
)

// checkCredential checks what both backends can store.
func checkCredential(c Credential) error {
	switch {
	case c.Kind == "" || c.Name == "":
		return errors.New("put credential: no kind or name")
	case !validText(c.User) || !validText(c.Kind) || !validText(c.Name):
		return fmt.Errorf("put credential %s/%s: not UTF-8 text without NUL", c.Kind, c.Name)
	}
	return nil
}

func (s *sqliteStore) PutCredential(ctx context.Context, c Credential) error {
	if err := checkCredential(c); err != nil {
		return err
	}
	if c.Data == nil {
		c.Data = []byte{}
	}
	_, err := s.w.ExecContext(ctx,
		`INSERT INTO user_credentials (user_key, kind, name, data, updated_at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (user_key, kind, name) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
		c.User, c.Kind, c.Name, c.Data, timestamp(s.opts.now()).UnixMicro())
	if err != nil {
		return fmt.Errorf("put credential %s/%s: %w", c.Kind, c.Name, err)
	}
	return nil
}

func (s *sqliteStore) GetCredential(ctx context.Context, user, kind, name string) (Credential, error) {
	c := Credential{User: user, Kind: kind, Name: name}
	if !validText(user) || !validText(kind) || !validText(name) {
		return Credential{}, fmt.Errorf("get credential %s/%s: %w", kind, name, ErrNoCredential)
	}
	var updated int64
	err := s.r.QueryRowContext(ctx,
		`SELECT data, updated_at FROM user_credentials WHERE user_key = ? AND kind = ? AND name = ?`, user, kind, name).
		Scan(&c.Data, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Credential{}, fmt.Errorf("get credential %s/%s: %w", kind, name, ErrNoCredential)
	}
	if err != nil {
		return Credential{}, fmt.Errorf("get credential %s/%s: %w", kind, name, err)
	}
	c.UpdatedAt = time.UnixMicro(updated).UTC()
	return c, nil
}

func (s *sqliteStore) ListCredentials(ctx context.Context, user, kind string) ([]Credential, error) {
	out := []Credential{}
	if !validText(user) || !validText(kind) {
		return out, nil
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT name, updated_at FROM user_credentials WHERE user_key = ? AND kind = ? ORDER BY name`, user, kind)
	if err != nil {
		return nil, fmt.Errorf("list credentials %s: %w", kind, err)
	}
	defer rows.Close()
	for rows.Next() {
		c := Credential{User: user, Kind: kind}
		var updated int64
		if err := rows.Scan(&c.Name, &updated); err != nil {
			return nil, fmt.Errorf("list credentials %s: %w", kind, err)
		}
		c.UpdatedAt = time.UnixMicro(updated).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list credentials %s: %w", kind, err)
	}
	return out, nil
}

func (s *sqliteStore) DeleteCredential(ctx context.Context, user, kind, name string) (bool, error) {
	if !validText(user) || !validText(kind) || !validText(name) {
		return false, nil
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM user_credentials WHERE user_key = ? AND kind = ? AND name = ?`, user, kind, name)
	if err != nil {
		return false, fmt.Errorf("delete credential %s/%s: %w", kind, name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("delete credential %s/%s: %w", kind, name, err)
	}
	return n > 0, nil
}

func (s *sqliteStore) DeleteUserCredentials(ctx context.Context, user string) (int64, error) {
	if !validText(user) {
		return 0, nil
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM user_credentials WHERE user_key = ?`, user)
	if err != nil {
		return 0, fmt.Errorf("delete credentials of a user: %w", err)
	}
	return res.RowsAffected()
}

func (s *sqliteStore) DeleteCredentialsBefore(ctx context.Context, kind string, t time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM user_credentials WHERE kind = ? AND updated_at < ?`, kind, timestamp(t).UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("delete credentials %s before %v: %w", kind, t, err)
	}
	return res.RowsAffected()
}

func (s *postgresStore) PutCredential(ctx context.Context, c Credential) error {
	if err := checkCredential(c); err != nil {
		return err
	}
	if c.Data == nil {
		c.Data = []byte{}
	}
	_, err := s.pool.Exec(ctx,
		`INSERT INTO user_credentials (user_key, kind, name, data, updated_at) VALUES ($1, $2, $3, $4, $5)
		 ON CONFLICT (user_key, kind, name) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
		c.User, c.Kind, c.Name, c.Data, timestamp(s.opts.now()))
	if err != nil {
		return fmt.Errorf("put credential %s/%s: %w", c.Kind, c.Name, err)
	}
	return nil
}

func (s *postgresStore) GetCredential(ctx context.Context, user, kind, name string) (Credential, error) {
	c := Credential{User: user, Kind: kind, Name: name}
	if !validText(user) || !validText(kind) || !validText(name) {
		return Credential{}, fmt.Errorf("get credential %s/%s: %w", kind, name, ErrNoCredential)
	}
	err := s.pool.QueryRow(ctx,
		`SELECT data, updated_at FROM user_credentials WHERE user_key = $1 AND kind = $2 AND name = $3`, user, kind, name).
		Scan(&c.Data, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Credential{}, fmt.Errorf("get credential %s/%s: %w", kind, name, ErrNoCredential)
	}
	if err != nil {
		return Credential{}, fmt.Errorf("get credential %s/%s: %w", kind, name, err)
	}
	c.UpdatedAt = c.UpdatedAt.UTC()
	return c, nil
}

func (s *postgresStore) ListCredentials(ctx context.Context, user, kind string) ([]Credential, error) {
	out := []Credential{}
	if !validText(user) || !validText(kind) {
		return out, nil
	}
	rows, err := s.pool.Query(ctx,
		`SELECT name, updated_at FROM user_credentials WHERE user_key = $1 AND kind = $2 ORDER BY name`, user, kind)
	if err != nil {
		return nil, fmt.Errorf("list credentials %s: %w", kind, err)
	}
	defer rows.Close()
	for rows.Next() {
		c := Credential{User: user, Kind: kind}
		if err := rows.Scan(&c.Name, &c.UpdatedAt); err != nil {
			return nil, fmt.Errorf("list credentials %s: %w", kind, err)
		}
		c.UpdatedAt = c.UpdatedAt.UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list credentials %s: %w", kind, err)
	}
	return out, nil
}

func (s *postgresStore) DeleteCredential(ctx context.Context, user, kind, name string) (bool, error) {
	if !validText(user) || !validText(kind) || !validText(name) {
		return false, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM user_credentials WHERE user_key = $1 AND kind = $2 AND name = $3`, user, kind, name)
	if err != nil {
		return false, fmt.Errorf("delete credential %s/%s: %w", kind, name, err)
	}
	return tag.RowsAffected() > 0, nil
}

func (s *postgresStore) DeleteUserCredentials(ctx context.Context, user string) (int64, error) {
	if !validText(user) {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM user_credentials WHERE user_key = $1`, user)
	if err != nil {
		return 0, fmt.Errorf("delete credentials of a user: %w", err)
	}
	return tag.RowsAffected(), nil
}

func (s *postgresStore) DeleteCredentialsBefore(ctx context.Context, kind string, t time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM user_credentials WHERE kind = $1 AND updated_at < $2`, kind, timestamp(t))
	if err != nil {
		return 0, fmt.Errorf("delete credentials %s before %v: %w", kind, t, err)
	}
	return tag.RowsAffected(), nil
}
