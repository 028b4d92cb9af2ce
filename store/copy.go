package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// DeletedProfile is the profile a revoked key of a deleted profile may name
// instead: no profile can be named so (names are printable).
const DeletedProfile = "\x01deleted\x01"

// CopyParams chooses what Copy copies.
type CopyParams struct {
	// Profiles are the profiles copied; empty: every profile of the
	// source, with the server-wide settings and every API key.
	Profiles []string
	// BatchSize is the memories read and written at a time (default
	// DefaultCopyBatch).
	BatchSize int
	// Progress, when set, is called after each batch.
	Progress func(profile string, copied, skipped int)
}

// DefaultCopyBatch is Copy's batch size: into Postgres, each batch
// rewrites the last posting block and the statistics of every term it
// holds, so larger batches write less.
const DefaultCopyBatch = 4000

// copyFirstPage and copyBatchBytes bound what a batch of Copy holds: the
// first page of a profile is short, and each next one is sized by the one
// before to hold about copyBatchBytes (a batch of the longest memories
// would hold a GiB), up to the batch size.
const (
	copyFirstPage  = 64
	copyBatchBytes = 16 << 20
)

// nextCopyPage is the length of the page after page, for a batch size of
// most.
func nextCopyPage(most int, page []mnemotype.Memory) int {
	size := 0
	for _, m := range page {
		size += len(m.ID) + len(m.Content) + len(m.Actor) + len(m.Metadata) + 4*len(m.Embedding) + 256 // and the other fields
	}
	if size == 0 {
		return most
	}
	return max(1, min(most, int(int64(len(page))*copyBatchBytes/int64(size))))
}

// CopyStats counts what Copy did.
type CopyStats struct {
	// Memories were written; Skipped were at the destination already (a
	// copy run again after an interruption).
	Memories, Skipped int
	Settings, Keys    int
}

// Copy copies memories, with their embeddings, access statistics, times,
// turns and metadata as they are, settings and API keys from src to dst,
// which may be any two stores (SQLite to Postgres and back). It can be
// run again after an interruption: what dst holds already (a memory of the
// same id, a key of the same id) is skipped, and each batch is written
// atomically, so nothing is written twice or half. Memories are copied in
// creation order, so that each turn finds the turns before it.
func Copy(ctx context.Context, dst, src Store, p CopyParams) (CopyStats, error) {
	var st CopyStats
	if p.BatchSize <= 0 {
		p.BatchSize = DefaultCopyBatch
	}
	profiles := p.Profiles
	all := len(profiles) == 0
	if all {
		pcs, err := src.Profiles(ctx)
		if err != nil {
			return st, fmt.Errorf("copy: %w", err)
		}
		for _, pc := range pcs {
			profiles = append(profiles, pc.Profile)
		}
	}
	if all {
		// Profiles that hold settings but no memories.
		more, err := src.SettingsProfiles(ctx)
		if err != nil {
			return st, fmt.Errorf("copy: %w", err)
		}
		for _, p := range more {
			if !slices.Contains(profiles, p) {
				profiles = append(profiles, p)
			}
		}
	}
	for _, profile := range profiles {
		cursor := ""
		limit := min(p.BatchSize, copyFirstPage)
		for {
			page, err := src.List(ctx, ListParams{Profile: profile, Limit: limit, Cursor: cursor, WithEmbedding: true})
			if err != nil {
				return st, fmt.Errorf("copy profile %q: read: %w", profile, err)
			}
			ids := make([]string, len(page.Memories))
			for i, m := range page.Memories {
				ids[i] = m.ID
			}
			have, err := dst.Get(ctx, GetParams{Profile: profile, IDs: ids})
			if err != nil {
				return st, fmt.Errorf("copy profile %q: %w", profile, err)
			}
			there := map[string]bool{}
			for _, m := range have {
				there[m.ID] = true
			}
			batch := slices.DeleteFunc(page.Memories, func(m mnemotype.Memory) bool { return there[m.ID] })
			if len(batch) > 0 {
				if err := dst.Insert(ctx, batch); err != nil {
					return st, fmt.Errorf("copy profile %q: write: %w", profile, err)
				}
			}
			limit = nextCopyPage(p.BatchSize, page.Memories)
			st.Memories += len(batch)
			st.Skipped += len(have)
			if p.Progress != nil {
				p.Progress(profile, st.Memories, st.Skipped)
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		n, err := copySettings(ctx, dst, src, profile)
		if err != nil {
			return st, err
		}
		st.Settings += n
	}
	if !all {
		return st, nil
	}
	n, err := copySettings(ctx, dst, src, "")
	if err != nil {
		return st, err
	}
	st.Settings += n
	keys, err := src.ListKeys(ctx, ListKeysParams{IncludeRevoked: true})
	if err != nil {
		return st, fmt.Errorf("copy keys: %w", err)
	}
	for _, k := range keys {
		if strings.ContainsRune(k.Profile, 0) {
			// The SQLite store's name of a deleted profile, unique per
			// profile, which PostgreSQL text cannot hold.
			k.Profile = DeletedProfile
		}
		if err := dst.CreateKey(ctx, k); err != nil {
			if errors.Is(err, mnemotype.ErrExists) {
				continue // copied before
			}
			return st, fmt.Errorf("copy key %s: %w", k.ID, err)
		}
		st.Keys++
	}
	return st, nil
}

// copySettings copies profile's stored settings ("" the server-wide ones).
func copySettings(ctx context.Context, dst, src Store, profile string) (int, error) {
	kv, err := src.Settings(ctx, profile)
	if err != nil {
		return 0, fmt.Errorf("copy settings of %q: %w", profile, err)
	}
	if len(kv) == 0 {
		return 0, nil
	}
	if err := dst.SetSettings(ctx, profile, kv); err != nil {
		return 0, fmt.Errorf("copy settings of %q: %w", profile, err)
	}
	return len(kv), nil
}
