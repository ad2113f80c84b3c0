// Command counter embeds CellB in a program of its own: the counter app
// (examples/counter) on the embedded default — cells in local SQLite files
// (the wasm driver), every commit also written to a bucket in a local
// directory, shard locks so two processes never write one cell — built
// by core/host, which also routes a call to the process holding its cell.
//
//	go run ./cmd/counter -data ./data -listen 127.0.0.1:8080
//	curl -X POST localhost:8080/counter/hits
//
// The data directory has cellb serve's layout: `cellb serve --data-dir ./data`
// serves the same counters.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/drivers/wasm"
	"github.com/cellb/cellb/examples/counter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], func(addr string) { slog.Info("serving", "addr", "http://"+addr) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "counter:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; ready gets the listening address.
func run(ctx context.Context, args []string, ready func(addr string)) (err error) {
	flags := flag.NewFlagSet("counter", flag.ContinueOnError)
	data := flags.String("data", "data", "data directory")
	listen := flags.String("listen", "127.0.0.1:8080", "HTTP listen address")
	if err := flags.Parse(args); err != nil {
		return err
	}
	// The bucket every commit is written to (here a local directory).
	dir := filepath.Join(*data, "bucket")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bucket, err := fs.Open(dir)
	if err != nil {
		return err
	}
	// The host is closed first (deferred last), then the bucket.
	defer bucket.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	h, err := host.New(ctx, host.Config{
		// The local file is the primary copy: one sync per commit.
		Driver:     wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=FULL")),
		DataDir:    *data,
		Bucket:     bucket,
		Mode:       ltxlog.Mode(),
		Ownership:  host.SingleHost, // shard locks: one writer per cell on this host
		Listener:   ln,
		ScriptName: "cellb-example", // keys the ids, as cellb serve's default
		Classes: func(s *host.Setup) error {
			app, err := counter.Register(s.Runtime, counter.Options{Node: s.Node})
			if err != nil {
				return err
			}
			app.Routes(s.Mux)
			return nil
		},
	})
	if err != nil {
		ln.Close()
		return err
	}
	ready(ln.Addr().String())
	// Until ctx ends or the listener fails; then the host closes in its
	// order: every call already taken gets its answer before the cells
	// close.
	return h.Run(ctx)
}
