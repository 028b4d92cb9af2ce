package main

import "context"

// cmdFuse is a placeholder replaced by the fusion work (issue 3).
func cmdFuse(ctx context.Context, a *app, args []string) error {
	return usagef("fuse is not available yet")
}
