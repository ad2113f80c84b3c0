// Command embedded-fleet runs a three-node CellB fleet on one bucket in one
// Go program: each node is a core/host.Host serving the counter app on a
// port of its own, joined to the fleet on an in-memory bucket, with a peer
// listener through which it forwards calls for cells another node owns.
// Any node answers for any cell; a node that closes hands its cells over.
//
//	go run ./embedded-fleet
//	curl -X POST localhost:<port>/counter/hits   (any of the three ports)
//
// A real deployment runs one node per process, on a shared bucket
// (fs.Open, s3, gcs, azure); docs/embedding.md walks through it.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/wasm"
	"github.com/cellb/cellb/examples/counter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "embedded-fleet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	bucket := memstore.New()
	var nodes []*host.Host
	for range 3 {
		h, url, err := startNode(ctx, bucket, dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("node %s serves %s\n", h.Node(), url)
		nodes = append(nodes, h)
	}
	<-ctx.Done()
	for _, h := range nodes {
		h.Close(context.Background()) // releases its cells to the others
	}
}

// startNode joins one node to the fleet on bucket and serves the counter
// app on a port of its own; it returns the node and its URL.
func startNode(ctx context.Context, bucket store.Store, dataDir string) (*host.Host, string, error) {
	public, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	peers, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		public.Close()
		return nil, "", err
	}
	h, err := host.New(ctx, host.Config{
		// The bucket wins in a fleet: the local file is a cache, so no
		// sync per commit.
		Driver:    wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=OFF")),
		DataDir:   dataDir, // each node keeps its files under nodes/<id>
		Bucket:    bucket,
		Mode:      ltxlog.Mode(),
		Ownership: host.Fleet,
		Fleet:     host.FleetConfig{PeerListener: peers},
		Listener:  public,
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
		return nil, "", err
	}
	return h, "http://" + public.Addr().String(), nil
}
