package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
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

// Credentials keeps users' sealed credentials; one conformance suite runs
// against each database.
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

var _ Credentials = (*sqlStore)(nil)

// checkCredential checks what both backends can store.
func checkCredential(c Credential) error {
	switch {
	case c.Kind == "" || c.Name == "":
		return errors.New("put credential: no kind or name")
	case !sqldb.ValidText(c.User) || !sqldb.ValidText(c.Kind) || !sqldb.ValidText(c.Name):
		return fmt.Errorf("put credential %s/%s: not UTF-8 text without NUL", c.Kind, c.Name)
	}
	return nil
}

func (s *sqlStore) PutCredential(ctx context.Context, c Credential) error {
	if err := checkCredential(c); err != nil {
		return err
	}
	if c.Data == nil {
		c.Data = []byte{}
	}
	_, err := s.db.Writer().ExecContext(ctx,
		`INSERT INTO user_credentials (user_key, kind, name, data, updated_at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (user_key, kind, name) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
		c.User, c.Kind, c.Name, c.Data, s.db.Time(s.opts.now()))
	if err != nil {
		return fmt.Errorf("put credential %s/%s: %w", c.Kind, c.Name, err)
	}
	return nil
}

func (s *sqlStore) GetCredential(ctx context.Context, user, kind, name string) (Credential, error) {
	c := Credential{User: user, Kind: kind, Name: name}
	if !sqldb.ValidText(user) || !sqldb.ValidText(kind) || !sqldb.ValidText(name) {
		return Credential{}, fmt.Errorf("get credential %s/%s: %w", kind, name, ErrNoCredential)
	}
	err := s.db.Reader().QueryRowContext(ctx,
		`SELECT data, updated_at FROM user_credentials WHERE user_key = ? AND kind = ? AND name = ?`, user, kind, name).
		Scan(&c.Data, sqldb.TimeDest(&c.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return Credential{}, fmt.Errorf("get credential %s/%s: %w", kind, name, ErrNoCredential)
	}
	if err != nil {
		return Credential{}, fmt.Errorf("get credential %s/%s: %w", kind, name, err)
	}
	return c, nil
}

func (s *sqlStore) ListCredentials(ctx context.Context, user, kind string) ([]Credential, error) {
	out := []Credential{}
	if !sqldb.ValidText(user) || !sqldb.ValidText(kind) {
		return out, nil
	}
	rows, err := s.db.Reader().QueryContext(ctx,
		`SELECT name, updated_at FROM user_credentials WHERE user_key = ? AND kind = ? ORDER BY name`, user, kind)
	if err != nil {
		return nil, fmt.Errorf("list credentials %s: %w", kind, err)
	}
	defer rows.Close()
	for rows.Next() {
		c := Credential{User: user, Kind: kind}
		if err := rows.Scan(&c.Name, sqldb.TimeDest(&c.UpdatedAt)); err != nil {
			return nil, fmt.Errorf("list credentials %s: %w", kind, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list credentials %s: %w", kind, err)
	}
	return out, nil
}

func (s *sqlStore) DeleteCredential(ctx context.Context, user, kind, name string) (bool, error) {
	if !sqldb.ValidText(user) || !sqldb.ValidText(kind) || !sqldb.ValidText(name) {
		return false, nil
	}
	n, err := sqldb.Affected(s.db.Writer().ExecContext(ctx,
		`DELETE FROM user_credentials WHERE user_key = ? AND kind = ? AND name = ?`, user, kind, name))
	if err != nil {
		return false, fmt.Errorf("delete credential %s/%s: %w", kind, name, err)
	}
	return n > 0, nil
}

func (s *sqlStore) DeleteUserCredentials(ctx context.Context, user string) (int64, error) {
	if !sqldb.ValidText(user) {
		return 0, nil
	}
	n, err := sqldb.Affected(s.db.Writer().ExecContext(ctx, `DELETE FROM user_credentials WHERE user_key = ?`, user))
	if err != nil {
		return 0, fmt.Errorf("delete credentials of a user: %w", err)
	}
	return n, nil
}

func (s *sqlStore) DeleteCredentialsBefore(ctx context.Context, kind string, t time.Time) (int64, error) {
	n, err := sqldb.Affected(s.db.Writer().ExecContext(ctx,
		`DELETE FROM user_credentials WHERE kind = ? AND updated_at < ?`, kind, s.db.Time(t)))
	if err != nil {
		return 0, fmt.Errorf("delete credentials %s before %v: %w", kind, t, err)
	}
	return n, nil
}
