package app

import (
	"context"
	"errors"
	"net/http"

	"github.com/cellb/cellb/core/store"
)

// The tests' handles on a server that serveCmd runs through host.Run.

// handler is the public app.
func (s *server) handler() http.Handler { return s.h.Handler() }

// close shuts the node down in the host's order, then closes the bucket.
func (s *server) close(ctx context.Context) error {
	return errors.Join(s.h.Close(ctx), store.Close(s.bucket))
}
