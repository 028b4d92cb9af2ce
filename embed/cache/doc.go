// Package cache is mnemo's on-disk embedding cache: an embed.Embedder
// decorator that keeps every vector its inner embedder returns in a SQLite
// file, keyed by (model name, SHA-256 of the text), and sends only the
// misses to the inner embedder. It exists for remote providers, where an
// embedding costs a network round trip and money: re-embedding a profile,
// importing the same texts twice or repeating a query is then free.
//
// The file may be shared by several processes (WAL, a busy timeout, one
// transaction per write) and a *Cache is safe for concurrent use. The cache
// never makes Embed fail: an entry that fails its checksum, has the wrong
// length or another dimension than the model's is ignored (embedded again
// and overwritten), and a cache that cannot be read or written is bypassed
// with a warning to Options.Logger.
//
// The model's dimension is recorded with its vectors, so Dim is known
// before the first call of an embedder that discovers its dimension by
// calling its server (packages openai and ollama without a configured
// dimension).
//
// The file is created readable by its owner only (0600, in a directory
// created 0700): the vectors describe the user's memories.
//
// The file grows with every distinct text; deleting it is always safe.
package cache
