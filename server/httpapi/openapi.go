package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPISpec is the OpenAPI 3.1 description of every route; a test keeps
// it and the route table in step.
//
//go:embed openapi.json
var openAPISpec []byte

// OpenAPI returns the OpenAPI document served at /openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPISpec...) }

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request, _ string) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(openAPISpec)
	return err
}
