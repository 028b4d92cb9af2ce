package sqlitestore

// migrations are applied in order; schema_version records how many ran.
// Never edit a released migration: append a new one.
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
	// 2: seed 001's vector-pool index: most recently accessed memories that
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
}
