package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

const keyCols = `id, profile, name, hash, prefix, created_at, revoked_at, role, profiles`

func scanKey(sc scanner) (store.APIKey, error) {
	var k store.APIKey
	var created int64
	var revoked sql.NullInt64
	var profiles sql.NullString
	if err := sc.Scan(&k.ID, &k.Profile, &k.Name, &k.Hash, &k.Prefix, &created, &revoked, &k.Role, &profiles); err != nil {
		return k, err
	}
	if profiles.Valid {
		if err := json.Unmarshal([]byte(profiles.String), &k.Profiles); err != nil {
			return k, fmt.Errorf("key %s: profiles: %w", k.ID, err)
		}
	}
	k.CreatedAt = time.Unix(0, created).UTC()
	if revoked.Valid {
		k.RevokedAt = time.Unix(0, revoked.Int64).UTC()
	}
	return k, nil
}

// CreateKey implements store.Store.
func (s *Store) CreateKey(ctx context.Context, k store.APIKey) error {
	w, err := s.writer()
	if err != nil {
		return err
	}
	if err := k.Validate(); err != nil {
		return err
	}
	var revoked, profiles any
	if !k.RevokedAt.IsZero() {
		revoked = k.RevokedAt.UnixNano()
	}
	if len(k.Profiles) > 0 {
		profiles = jsonList(k.Profiles)
	}
	_, err = w.ExecContext(ctx, `INSERT INTO api_keys(`+keyCols+`) VALUES (?,?,?,?,?,?,?,?,?)`,
		k.ID, k.Profile, k.Name, k.Hash, k.Prefix, k.CreatedAt.UnixNano(), revoked, k.Role, profiles)
	if err != nil {
		if isUnique(err) {
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
	k, err := scanKey(s.rc.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE hash = ? AND revoked_at IS NULL`, hash))
	if errors.Is(err, sql.ErrNoRows) {
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
	where := []string{"1 = 1"}
	var args []any
	if p.Profile != "" {
		where = append(where, `(profile = ? OR role = '`+store.RoleService+`' AND (profiles IS NULL OR ? IN (SELECT value FROM json_each(profiles))))`)
		args = append(args, p.Profile, p.Profile)
	}
	if !p.IncludeRevoked {
		where = append(where, "revoked_at IS NULL")
	}
	rows, err := s.rc.QueryContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var out []store.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return out, nil
}

// RevokeKey implements store.Store.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	w, err := s.writer()
	if err != nil {
		return err
	}
	res, err := w.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, at.UnixNano(), id)
	if err != nil {
		return fmt.Errorf("revoke key %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("revoke key %s: %w", id, mnemotype.ErrNotFound)
	}
	return nil
}
