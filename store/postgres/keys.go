package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// Key times are Unix nanoseconds, as the SQLite store keeps them: keys are
// made now, never in another century.
const keyCols = `id, profile, name, hash, prefix, created_at, revoked_at, role, profiles`

func scanKey(row pgx.Row) (store.APIKey, error) {
	var k store.APIKey
	var created int64
	var revoked *int64
	if err := row.Scan(&k.ID, &k.Profile, &k.Name, &k.Hash, &k.Prefix, &created, &revoked, &k.Role, &k.Profiles); err != nil {
		return k, err
	}
	k.CreatedAt = time.Unix(0, created).UTC()
	if revoked != nil {
		k.RevokedAt = time.Unix(0, *revoked).UTC()
	}
	return k, nil
}

// CreateKey implements store.Store.
func (s *Store) CreateKey(ctx context.Context, k store.APIKey) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := k.Validate(); err != nil {
		return err
	}
	var revoked *int64
	if !k.RevokedAt.IsZero() {
		r := k.RevokedAt.UnixNano()
		revoked = &r
	}
	var profiles []string
	if len(k.Profiles) > 0 {
		profiles = k.Profiles
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO api_keys (`+keyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		k.ID, k.Profile, k.Name, k.Hash, k.Prefix, k.CreatedAt.UnixNano(), revoked, k.Role, profiles)
	if err != nil {
		if sqlState(err) == codeUniqueViolation {
			return fmt.Errorf("%w: key %s: id or hash %w", mnemotype.ErrInvalid, k.ID, mnemotype.ErrExists)
		}
		return fmt.Errorf("create key %s: %w", k.ID, mapErr(err))
	}
	return nil
}

// KeyByHash implements store.Store.
func (s *Store) KeyByHash(ctx context.Context, hash string) (store.APIKey, error) {
	if err := s.check(); err != nil {
		return store.APIKey{}, err
	}
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys WHERE hash = $1 AND revoked_at IS NULL`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.APIKey{}, fmt.Errorf("find key: %w", mnemotype.ErrNotFound)
	}
	if err != nil {
		return store.APIKey{}, fmt.Errorf("find key: %w", err)
	}
	return k, nil
}

// ListKeys implements store.Store.
func (s *Store) ListKeys(ctx context.Context, p store.ListKeysParams) ([]store.APIKey, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	where := []string{"true"}
	var a args
	if p.Profile != "" {
		ph := a.add(p.Profile)
		where = append(where, `(profile = `+ph+` OR role = '`+store.RoleService+`' AND (profiles IS NULL OR `+ph+` = ANY(profiles)))`)
	}
	if !p.IncludeRevoked {
		where = append(where, "revoked_at IS NULL")
	}
	rows, err := s.pool.Query(ctx, `SELECT `+keyCols+` FROM api_keys WHERE `+strings.Join(where, " AND ")+` ORDER BY created_at, id`, a...)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.APIKey, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return out, nil
}

// RevokeKey implements store.Store.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	if err := s.check(); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, at.UnixNano(), id)
	if err != nil {
		return fmt.Errorf("revoke key %s: %w", id, mapErr(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("revoke key %s: %w", id, mnemotype.ErrNotFound)
	}
	return nil
}
