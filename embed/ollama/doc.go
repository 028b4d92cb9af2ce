// Package ollama is an embed.Embedder for Ollama's embedding API:
// POST {base}/api/embed with {"model", "input": [...]}, answered by
// {"embeddings": [[...], ...]}.
//
// Its rules are those of package openai: batches of at most
// Config.MaxBatch texts; a timeout per HTTP attempt; a 408, 429 or 5xx
// answer, a network error or an attempt timing out is retried with
// exponential backoff and full jitter (honouring Retry-After); any other 4xx
// — such as 404 for a model that is not pulled — fails at once with the
// server's message. An answer must hold one vector per text, all of one
// dimension, equal to Config.Dimensions or, when that is 0, to the
// dimension of the first successful answer. Vectors are L2-normalised.
//
// Dim is known from Config.Dimensions when set; otherwise it is 0 until the
// first successful Embed call discovers it, and fixed from then on.
//
// An *Embedder is safe for concurrent use. It reads no environment
// variables.
package ollama
