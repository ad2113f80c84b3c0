// Command counter embeds CellB in a program of its own: the counter app
// (examples/counter) on the embedded default — cells in local SQLite files
// (the wasm driver), every commit also written to a bucket in a local
// directory, shard locks so two processes never write one cell.
//
//	go run ./cmd/counter -data ./data -listen 127.0.0.1:8080
//	curl -X POST localhost:8080/counter/hits
//
// The data directory has cellb serve's layout: `cellb serve --data ./data`
// serves the same counters.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/shard"
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
	defer bucket.Close()
	log, err := ltxlog.New(ltxlog.Options{Store: bucket})
	if err != nil {
		return err
	}
	// Shard locks: processes sharing the data directory never write one cell.
	shards, err := shard.Open(filepath.Join(*data, "shards"), 16)
	if err != nil {
		return err
	}
	defer shards.Close()
	rt, err := cell.New(cell.Options{
		ScriptName: "cellb-example", // keys the ids, as cellb serve's default
		Driver:     wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=FULL")),
		DataDir:    filepath.Join(*data, "cells"),
		Lease:      shards,
		Log:        log,
	})
	if err != nil {
		return err
	}
	// Closed before the shard locks and the bucket (deferred earlier).
	defer func() { err = errors.Join(err, rt.Close(context.Background())) }()
	app, err := counter.Register(rt, counter.Options{})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	app.Routes(mux)

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ready(ln.Addr().String())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Every call already taken gets its answer before the runtime closes.
	return srv.Shutdown(context.Background())
}
