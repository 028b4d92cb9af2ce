// Package openai is an embed.Embedder for OpenAI-compatible embedding APIs:
// POST {base}/v1/embeddings, as served by OpenAI, vLLM, Hugging Face TEI,
// LM Studio and llama.cpp's server.
//
// Texts are sent in batches of at most Config.MaxBatch. Each HTTP attempt
// has its own timeout (Config.Timeout); a 408, 429 or 5xx answer, a network
// error or an attempt timing out is retried with exponential backoff and
// full jitter (a Retry-After or retry-after-ms header, when sent, is
// honoured instead). Any other 4xx fails at once with the server's message.
// A successful answer is checked: one vector per text, all of one
// dimension, and that dimension must match Config.Dimensions or, when it is
// 0, the dimension of the embedder's first successful answer. Vectors are
// L2-normalised before they are returned.
//
// Dim is known from Config.Dimensions when set; otherwise it is 0 until the
// first successful Embed call discovers it, and fixed from then on (wrap
// the embedder in package cache to remember it across processes).
//
// An *Embedder is safe for concurrent use. It reads no environment
// variables: the caller passes the base URL and the API key.
package openai
