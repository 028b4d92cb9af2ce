package main

import (
	"context"
	"fmt"

	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// cmdOpenAPI prints the OpenAPI document mnemo serve serves at
// /openapi.json, for linters and client generators that work offline.
func cmdOpenAPI(_ context.Context, a *app, args []string) error {
	fs := newFlags(a, "openapi")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, `usage: mnemo openapi

Prints the OpenAPI 3.1 document of the HTTP API, as mnemo serve serves it
at /openapi.json, without a server or a database.`)
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("mnemo openapi takes no arguments, got %q", pos)
	}
	_, err = a.stdout.Write(httpapi.OpenAPI())
	return err
}
