// Package fusion merges ranked lists from several retrieval legs (lexical,
// dense, recency, access, …) into one ranking.
//
// It is pure: no I/O, no context, no logging, no package state. It never
// mutates its inputs, every ordering it produces is total (score, then a
// strategy's tie-breaker, then the item's best rank in any leg, then id), so
// the same input always gives the same output, and no score it returns is NaN
// or ±Inf. All functions are safe for concurrent use.
//
// # Notation
//
// For an item d and a leg i: rᵢ(d) is d's 1-based dense rank in leg i (ties
// share a rank), sᵢ(d) its raw score (higher is better), nᵢ(d) ∈ [0, 1] its
// normalised score (see Normalization), wᵢ ≥ 0 the leg's weight. A leg is
// active when its weight is > 0 and it listed at least one hit; inactive legs
// are ignored entirely (a zero-weight leg adds nothing and admits nothing,
// which makes weight 0 equivalent to the leg being absent). W = Σ wᵢ over the
// active legs and w_max = max wᵢ.
//
// # Strategies
//
//	rrf                 Σᵢ wᵢ / (k + rᵢ)                        k = 60 (DefaultK)
//	borda_rank          Σᵢ wᵢ / (k_borda + rᵢ)                  k_borda = 60 (DefaultBordaK)
//	weighted_average    Σᵢ (wᵢ / W) · nᵢ
//	score_weighted_rrf  Σᵢ wᵢ · nᵢ / (rᵢ + kParam)              kParam = 5 (DefaultKParam)
//	max_confidence      maxᵢ (wᵢ / w_max) · nᵢ                  ties: Σᵢ nᵢ, higher first
//	dbsf                Σᵢ wᵢ · dᵢ,  dᵢ = clip((sᵢ − μᵢ + 3σᵢ) / 6σᵢ, 0.001, 1)
//
// A leg that did not list d contributes according to the MissingPolicy
// (default: nothing). An optional exact-match bonus and two automatic switches
// (high-confidence shortcut, query-adaptive weights) are described on Params.
//
// FuseExplain returns the whole computation as data (Outcome): the strategy
// actually used, the switches that fired, the effective weights, every
// result's per-leg rank, raw and normalised score and contribution, and, when
// asked, each result's rank under every other strategy (a counterfactual
// trace) so a user can see what switching strategy would change.
package fusion
