package r2

import "context"

// WriteGate runs one write of a Bucket (Put, Delete, or a step of a
// multipart upload) and returns its error. It exists so a host can make a
// cell's R2 writes outgoing I/O of that cell: core/host runs each write
// through cell.Await, so it waits until the cell's earlier commits are
// durable (the output gate) and is not made when one fails. A gate must
// call write at most once, with a context derived from ctx.
type WriteGate func(ctx context.Context, write func(ctx context.Context) error) error

// WithWriteGate returns a Bucket over the same objects whose writes go
// through g (nil: none). Reads are never gated.
func (b *Bucket) WithWriteGate(g WriteGate) *Bucket {
	c := *b
	c.gate = g
	return &c
}

// gated runs write through the bucket's gate, if any.
func (b *Bucket) gated(ctx context.Context, write func(ctx context.Context) error) error {
	if b.gate == nil {
		return write(ctx)
	}
	return b.gate(ctx, write)
}
