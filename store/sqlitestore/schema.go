package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode"
)

// migrations are applied in order; schema_version records how many ran.
// Never edit a released migration: append a new one. A migration that
// needs Go as well as SQL has its step in migrationSteps, run right after
// its SQL in the same transaction.
var migrations = []string{
	// 1: memories, full-text index kept in sync by triggers, change log.
	`CREATE TABLE memories (
		rid             INTEGER PRIMARY KEY,
		id              TEXT    NOT NULL,
		profile         TEXT    NOT NULL,
		project         TEXT    NOT NULL DEFAULT '',
		session         TEXT    NOT NULL DEFAULT '',
		kind            TEXT    NOT NULL,
		content         TEXT    NOT NULL,
		importance      REAL    NOT NULL,
		created_at      INTEGER NOT NULL,
		accessed_at     INTEGER NOT NULL,
		access_count    INTEGER NOT NULL DEFAULT 0,
		metadata        TEXT,
		embedding       BLOB,
		embedding_model TEXT,
		embedding_dim   INTEGER,
		seq             INTEGER NOT NULL,
		UNIQUE (profile, id)
	);
	CREATE INDEX memories_scope   ON memories(profile, project, session);
	CREATE INDEX memories_created ON memories(profile, created_at, id);
	CREATE INDEX memories_seq     ON memories(profile, seq);
	CREATE VIRTUAL TABLE memories_fts USING fts5(
		content, content='memories', content_rowid='rid', tokenize='porter unicode61'
	);
	CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
		INSERT INTO memories_fts(rowid, content) VALUES (new.rid, new.content);
	END;
	CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
		INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.rid, old.content);
	END;
	CREATE TRIGGER memories_au AFTER UPDATE OF content ON memories BEGIN
		INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.rid, old.content);
		INSERT INTO memories_fts(rowid, content) VALUES (new.rid, new.content);
	END;
	CREATE TABLE tombstones (
		seq     INTEGER PRIMARY KEY,
		profile TEXT NOT NULL,
		id      TEXT NOT NULL
	);
	CREATE INDEX tombstones_profile ON tombstones(profile, seq);
	CREATE TABLE counters (
		name  TEXT PRIMARY KEY,
		value INTEGER NOT NULL
	);
	INSERT INTO counters(name, value) VALUES ('seq', 0);`,
	// 2: the vector-pool index: most recently accessed memories that
	// have an embedding.
	`CREATE INDEX memories_recent_embedded ON memories(profile, accessed_at DESC, id) WHERE embedding IS NOT NULL;`,
	// 3: settings per profile; profile '' holds server-wide defaults.
	`CREATE TABLE settings (
		profile TEXT NOT NULL,
		key     TEXT NOT NULL,
		value   TEXT NOT NULL,
		PRIMARY KEY (profile, key)
	);`,
	// 4: API keys bound to profiles; only the token's SHA-256 is kept.
	`CREATE TABLE api_keys (
		id         TEXT    PRIMARY KEY,
		profile    TEXT    NOT NULL,
		name       TEXT    NOT NULL DEFAULT '',
		hash       TEXT    NOT NULL UNIQUE,
		prefix     TEXT    NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		revoked_at INTEGER
	);
	CREATE INDEX api_keys_profile ON api_keys(profile, created_at, id);`,
	// 5: key roles: '' a profile key, 'admin' an operator's key.
	`ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT '';`,
	// 6: the memory model of conversations and a full-text index with
	// per-profile BM25 statistics.
	//  - Timestamps as fixed-width RFC 3339 text with nanoseconds (every
	//    time in years 0001-9999 exactly; nanoseconds since 1970 in an
	//    int64 covered 1678-2262 only).
	//  - actor (who said or did it), occurred_at (when it happened, from
	//    created_at for existing rows) and session_seq (its order in the
	//    session, numbered in creation order for existing rows).
	//  - A contentless FTS5 table the store writes itself: the fields
	//    content, actor, time (occurred_at in words), context (the
	//    previous turns of the session) and scope, the row's place as
	//    tokens (profile, kind, session, project, actor, numbered in
	//    profiles and scope_names) so that a query selects a profile's or
	//    a session's rows inside FTS5, ranked against that profile's own
	//    statistics (profiles.docs and the fields' total lengths).
	//    migrationSteps[6] fills it.
	`CREATE TABLE memories_v6 (
		rid             INTEGER PRIMARY KEY,
		id              TEXT    NOT NULL,
		profile         TEXT    NOT NULL,
		project         TEXT    NOT NULL DEFAULT '',
		session         TEXT    NOT NULL DEFAULT '',
		session_seq     INTEGER NOT NULL DEFAULT 0,
		actor           TEXT    NOT NULL DEFAULT '',
		kind            TEXT    NOT NULL,
		content         TEXT    NOT NULL,
		importance      REAL    NOT NULL,
		occurred_at     TEXT    NOT NULL,
		created_at      TEXT    NOT NULL,
		accessed_at     TEXT    NOT NULL,
		access_count    INTEGER NOT NULL DEFAULT 0,
		metadata        TEXT,
		embedding       BLOB,
		embedding_model TEXT,
		embedding_dim   INTEGER,
		seq             INTEGER NOT NULL,
		UNIQUE (profile, id)
	);
	INSERT INTO memories_v6 SELECT rid, id, profile, project, session,
		row_number() OVER (PARTITION BY profile, session ORDER BY created_at, rid), '', kind, content, importance,
		` + nanosToText("created_at") + `, ` + nanosToText("created_at") + `, ` + nanosToText("accessed_at") + `,
		access_count, metadata, embedding, embedding_model, embedding_dim, seq FROM memories;
	DROP TABLE memories_fts;
	DROP TABLE memories;
	ALTER TABLE memories_v6 RENAME TO memories;
	CREATE INDEX memories_scope    ON memories(profile, project, session);
	CREATE INDEX memories_created  ON memories(profile, created_at, id);
	CREATE INDEX memories_seq      ON memories(profile, seq);
	CREATE INDEX memories_turns    ON memories(profile, session, session_seq);
	CREATE INDEX memories_occurred ON memories(profile, occurred_at);
	CREATE INDEX memories_recent_embedded ON memories(profile, accessed_at DESC, id) WHERE embedding IS NOT NULL;
	CREATE TABLE profiles (
		id             INTEGER PRIMARY KEY,
		name           TEXT    NOT NULL UNIQUE,
		seq            INTEGER NOT NULL DEFAULT 0,
		docs           INTEGER NOT NULL DEFAULT 0,
		content_tokens INTEGER NOT NULL DEFAULT 0,
		actor_tokens   INTEGER NOT NULL DEFAULT 0,
		time_tokens    INTEGER NOT NULL DEFAULT 0,
		context_tokens INTEGER NOT NULL DEFAULT 0
	);
	CREATE TABLE scope_names (
		id         INTEGER PRIMARY KEY,
		profile_id INTEGER NOT NULL,
		field      TEXT    NOT NULL,
		name       TEXT    NOT NULL,
		UNIQUE (profile_id, field, name)
	);
	CREATE VIRTUAL TABLE memories_fts USING fts5(
		content, actor, time, context, scope, content='', contentless_delete=1, tokenize='porter unicode61'
	);
	INSERT INTO counters(name, value) VALUES ('context_turns', -1);`,
	// 7: service keys: role 'service', profiles the JSON list of the
	// profiles it may act on (NULL: any).
	`ALTER TABLE api_keys ADD COLUMN profiles TEXT;`,
	// 8: settings keys in snake_case (keyword_weight, not keywordWeight);
	// the Go step renames the stored ones.
	`SELECT 1;`,
	// 9: the database's instance: a random number drawn once, which files
	// derived from the database (the dense index's snapshots) record.
	`INSERT OR IGNORE INTO counters(name, value) VALUES ('instance', random() & 9223372036854775807);`,
	// 10: FTS5 merges its index's segments sixteen at a time, not four:
	// each posting is rewritten about half as often while memories are
	// written, and a query meets a few more segments. The option is kept
	// in the index's own config table (memories_fts_config).
	`INSERT INTO memories_fts(memories_fts, rank) VALUES ('automerge', ` + ftsAutomerge + `);`,
	// 11: the full-text index is given its fields as tokens made in Go
	// (ftsText: FTS5's 'porter unicode61' tokens, to the byte, separated
	// by spaces), which its 'ascii' tokenizer splits back, so that a write
	// tokenizes beside its transaction. The terms, positions and lengths
	// are those of migration 6's table; migration 12's Go step indexes
	// every memory again (unless the index was never built: Open builds it
	// then).
	`DROP TABLE memories_fts;
	CREATE VIRTUAL TABLE memories_fts USING fts5(
		content, actor, time, context, scope, content='', contentless_delete=1, tokenize='ascii'
	);
	INSERT INTO memories_fts(memories_fts, rank) VALUES ('automerge', ` + ftsAutomerge + `);`,
	// 12: the full-text index is renamed memories_lex, so that a process
	// of an older mnemo still open on the database fails ("no such
	// table") instead of writing raw text into the table migration 11
	// gave tokens. Only a level of 64 segments is merged whole inside the
	// write that made it (crisismerge; at FTS5's default, 16, equal to
	// automerge, no level would be left to the incremental merges). Its
	// Go step indexes every memory again, into the renamed table.
	`ALTER TABLE memories_fts RENAME TO memories_lex;
	INSERT INTO memories_lex(memories_lex, rank) VALUES ('crisismerge', ` + ftsCrisismerge + `);`,
	// 13: FTS5 keeps the terms a transaction writes in memory until they
	// reach hashsize (1 MiB by default), then writes them out as a new
	// segment: an import's batch of 4,000 memories was written as several
	// segments, each to be merged later; at 32 MiB, as one, at commit.
	`INSERT INTO memories_lex(memories_lex, rank) VALUES ('hashsize', ` + ftsHashsize + `);`,
	// 14: the settings version (Store.Versions), which every change to
	// table settings advances, whoever makes it, so that a process may
	// keep settings it read while the version stays the same.
	`INSERT OR IGNORE INTO counters(name, value) VALUES ('settings', 0);
	CREATE TRIGGER settings_ai AFTER INSERT ON settings BEGIN
		UPDATE counters SET value = value + 1 WHERE name = 'settings';
	END;
	CREATE TRIGGER settings_au AFTER UPDATE ON settings BEGIN
		UPDATE counters SET value = value + 1 WHERE name = 'settings';
	END;
	CREATE TRIGGER settings_ad AFTER DELETE ON settings BEGIN
		UPDATE counters SET value = value + 1 WHERE name = 'settings';
	END;`,
	// 15: the watermarks of the caches kept outside the database (the
	// dense indexes' snapshots), each with a random mark
	// (Store.MarkWatermark): a file copy of the database keeps its
	// instance and sequence, not the marks made after it.
	`CREATE TABLE watermarks (
		id      INTEGER PRIMARY KEY,
		profile TEXT    NOT NULL,
		seq     INTEGER NOT NULL,
		mark    TEXT    NOT NULL UNIQUE
	);
	CREATE INDEX watermarks_profile ON watermarks(profile, id);`,
}

// ftsAutomerge is how many segments of one level FTS5 merges into one
// (migration 10; FTS5's default is 4).
const ftsAutomerge = "16"

// ftsCrisismerge is how many segments of one level make FTS5 merge them at
// once, inside a write (migration 12; FTS5's default is 16).
const ftsCrisismerge = "64"

// ftsHashsize is how many bytes of new terms FTS5 keeps in memory before
// it writes them out (migration 13; FTS5's default is 1 MiB).
const ftsHashsize = "33554432"

// reindexingMigrations are the versions whose migration re-indexes every
// memory (Store.migrate announces them).
var reindexingMigrations = []int{12}

// migrationSteps holds the Go part of migrations, by the version they
// bring the schema to.
var migrationSteps = map[int]func(ctx context.Context, tx *sql.Tx) error{
	8:  snakeCaseSettings,
	12: reindexBuilt,
}

// reindexBuilt indexes every memory again, with the context turns the
// index was built with, unless it was never built.
func reindexBuilt(ctx context.Context, tx *sql.Tx) error {
	var built int
	if err := tx.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'context_turns'`).Scan(&built); err != nil {
		return fmt.Errorf("read the index's context turns: %w", err)
	}
	if built < 0 {
		return nil
	}
	return reindex(ctx, tx, built)
}

// snakeCaseSettings renames the stored settings keys from camelCase to
// snake_case (rrfK → rrf_k), keeping the value of a key already stored in
// both spellings under the snake_case one.
func snakeCaseSettings(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT key FROM settings`)
	if err != nil {
		return err
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		if snake := snakeCase(k); snake != k {
			if _, err := tx.ExecContext(ctx, `UPDATE OR IGNORE settings SET key = ? WHERE key = ?`, snake, k); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM settings WHERE key = ?`, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// snakeCase is a camelCase name in snake_case.
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// applyMigrations brings the schema inside tx from version from to to.
func applyMigrations(ctx context.Context, tx *sql.Tx, from, to int) error {
	for i := from; i < to; i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migrate to version %d: %w", i+1, err)
		}
		if step := migrationSteps[i+1]; step != nil {
			if err := step(ctx, tx); err != nil {
				return fmt.Errorf("migrate to version %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// nanosToText is the SQL rendering of an integer column of Unix
// nanoseconds as the text timeLayout gives (floor division, so times before
// 1970 keep their nanoseconds).
func nanosToText(col string) string {
	frac := `((` + col + ` % 1000000000) + 1000000000) % 1000000000`
	return `strftime('%Y-%m-%dT%H:%M:%S', (` + col + ` - ` + frac + `) / 1000000000, 'unixepoch') || '.' || printf('%09d', ` + frac + `) || 'Z'`
}
