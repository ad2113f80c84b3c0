package host

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/r2"
)

// R2 bindings. Config.R2 names them as a Worker's [[r2_buckets]] do: a
// binding name (what code asks for) mapped to a bucket_name, whose objects
// live under r2/<bucket_name>/ in Config.Bucket in celld's format
// (core/r2, docs/r2.md). Code reaches a bucket by its binding name through
// Setup.R2 while classes and routes are registered — the Go counterpart of
// a Worker's env.IMAGES, handed to a cell's constructor or an HTTP handler
// by closure — or through Host.R2 afterwards. core/cell stays without a
// bucket: the runtime's layering forbids it, and R2 is an environment
// binding in Workers, not part of a Durable Object's state.
//
// A binding's writes (Put, Delete, multipart steps) made with a cell
// handler's context are that cell's outgoing I/O: each runs through
// cell.Await (cellWriteGate), so it ends the turn, waits until every commit
// of the cell before it is durable, and is not made when one fails (the
// reset); cell.AllowUnconfirmed lets it go at once. Reads are not gated.

// ErrNoBinding is matched by the error of a lookup of a binding name
// Config.R2 does not declare.
var ErrNoBinding = errors.New("host: no such R2 binding")

// BindingError is a lookup of an undeclared R2 binding.
type BindingError struct {
	Name     string
	Declared []string
}

func (e *BindingError) Error() string {
	return fmt.Sprintf("host: no R2 binding %q (declared: %v)", e.Name, e.Declared)
}

// Is matches ErrNoBinding.
func (e *BindingError) Is(target error) bool { return target == ErrNoBinding }

// openR2 makes the buckets of cfg.R2 over cfg.Bucket.
func openR2(cfg Config) (map[string]*r2.Bucket, error) {
	if len(cfg.R2) == 0 {
		return nil, nil
	}
	if cfg.Bucket == nil {
		return nil, fmt.Errorf("%w: Config.R2 needs Config.Bucket (its objects live there)", ErrConfig)
	}
	out := make(map[string]*r2.Bucket, len(cfg.R2))
	for binding, name := range cfg.R2 {
		if binding == "" {
			return nil, fmt.Errorf("%w: Config.R2 has an empty binding name", ErrConfig)
		}
		b, err := r2.New(cfg.Bucket, name)
		if err != nil {
			return nil, fmt.Errorf("%w: R2 binding %s: %w", ErrConfig, binding, err)
		}
		out[binding] = b.WithWriteGate(cellWriteGate)
	}
	return out, nil
}

// cellWriteGate runs an R2 write as outgoing I/O of the cell whose handler
// ctx belongs to (cell.Await); outside a handler it just runs it.
func cellWriteGate(ctx context.Context, write func(ctx context.Context) error) error {
	_, err := cell.Await(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, write(ctx) })
	return err
}

// R2 returns the bucket bound to binding in Config.R2. An undeclared name
// gives a *BindingError (ErrNoBinding).
func (h *Host) R2(binding string) (*r2.Bucket, error) {
	if b, ok := h.r2[binding]; ok {
		return b, nil
	}
	declared := make([]string, 0, len(h.r2))
	for n := range h.r2 {
		declared = append(declared, n)
	}
	sort.Strings(declared)
	return nil, &BindingError{Name: binding, Declared: declared}
}

// R2 returns the bucket bound to binding, as Host.R2 does, for the classes
// and routes being registered.
func (s *Setup) R2(binding string) (*r2.Bucket, error) {
	if s.host == nil {
		return nil, &BindingError{Name: binding}
	}
	return s.host.R2(binding)
}

// r2Buckets are a host's R2 buckets by binding name.
type r2Buckets = map[string]*r2.Bucket
