// Package eval measures recall quality: it loads an evaluation dataset (a
// corpus, queries and relevance judgments), stores the corpus in a
// throwaway mnemo store, runs every query under each configuration of
// settings, and reports recall@K, nDCG@10 and MRR@10 overall, per category
// and without chosen categories, each configuration's paired comparison with
// a baseline (bootstrap confidence interval and randomization-test p-value),
// sweeps of any setting, and the same as JSON, Markdown and an SVG chart.
//
// The metric functions (RecallAt, NDCGAt, MRRAt) and the statistics
// (BootstrapCI, RandomizationP) are pure. Run embeds with the embedder it
// is given: wrap a remote one in package embed/cache's on-disk cache so that
// rerunning an evaluation does not re-embed its corpus.
//
// Typical use:
//
//	ds, err := eval.Load("datasets/locomo-dev", eval.LoadOptions{})
//	rep, err := eval.Run(ctx, ds, eval.Options{Embedder: emb})
//	rep.WriteMarkdown(w, "")
package eval
