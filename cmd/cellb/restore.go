package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
)

func restoreCommand() command {
	return command{
		name:    "restore",
		summary: "rebuild a cell's database from a bucket (read-only)",
		run: func(ctx context.Context, e *env, args []string) int {
			return restoreCmd(ctx, e, args, bucketMux())
		},
	}
}

const restoreUsage = `usage: cellb restore <bucket-url> <Class:id> <out.db> [--from ltx|changeset|backup]
                    [--txid N | --time T] [--force]

Rebuilds the cell's SQLite database from what the bucket keeps of it and
writes it to out.db. It only reads the bucket: it never takes ownership,
so it is safe while nodes serve the cell.

--from picks the source (default: the one the bucket holds for the cell;
name one when it holds several): ltx, the LTX log (any TXID or time with
--txid or --time, which takes RFC 3339 such as 2026-05-30T02:46:41Z or Unix
milliseconds); changeset, the changeset log (its newest state); backup, the
newest whole-database backup.`

func restoreCmd(ctx context.Context, e *env, args []string, mux *store.URLMux) int {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	txid := fs.Uint64("txid", 0, "restore exactly this transaction")
	at := fs.String("time", "", "restore the newest state at or before this time")
	force := fs.Bool("force", false, "overwrite out.db if it exists")
	from := fs.String("from", "", "ltx, changeset or backup (default: what the bucket holds)")
	quiet := fs.Bool("quiet", false, "no progress output")
	pos, err := parseFlags(fs, args)
	if err != nil || len(pos) != 3 {
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(e.stderr, "cellb restore: %v\n", err)
		}
		fmt.Fprintln(e.stderr, restoreUsage)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bucketURL, cellKey, out := pos[0], pos[1], pos[2]
	if err := cell.ValidateCellKey(cellKey); err != nil {
		fmt.Fprintf(e.stderr, "cellb restore: %v\n", err)
		return 2
	}
	opts := ltxlog.RestoreOptions{TXID: ltx.TXID(*txid)}
	if *at != "" {
		if *txid != 0 {
			fmt.Fprintln(e.stderr, "cellb restore: give --txid or --time, not both")
			return 2
		}
		t, err := parseTime(*at)
		if err != nil {
			fmt.Fprintf(e.stderr, "cellb restore: --time %q: %v\n", *at, err)
			return 2
		}
		opts.Time = t
	}
	if !*force {
		if _, err := os.Stat(out); err == nil {
			fmt.Fprintf(e.stderr, "cellb restore: %s exists; pass --force to overwrite it\n", out)
			return 1
		}
	}
	s, err := openBucket(ctx, mux, bucketURL)
	if err != nil {
		fmt.Fprintf(e.stderr, "cellb restore: %v\n", err)
		return 1
	}
	defer store.Close(s)
	source, err := pickRestoreSource(ctx, s, cellKey, *from)
	if err != nil {
		fmt.Fprintf(e.stderr, "cellb restore: %s: %v\n", cellKey, err)
		return 1
	}
	if source != "ltx" {
		if *txid != 0 || *at != "" {
			fmt.Fprintf(e.stderr, "cellb restore: --txid and --time need the LTX log; the %s log restores its newest state\n", source)
			return 2
		}
		what, n, err := restoreImage(ctx, s, cellKey, source, out)
		if err != nil {
			fmt.Fprintf(e.stderr, "cellb restore: %s: %v\n", cellKey, oneLine(err))
			return 1
		}
		fmt.Fprintf(e.stdout, "restored %s from %s (%s) to %s\n", cellKey, what, size(n), out)
		return 0
	}
	if !*quiet {
		bar := newProgressBar(e.stderr, "restore "+cellKey)
		opts.Progress = bar.update
	}
	res, n, err := restoreToFile(ctx, s, cellKey, opts, out)
	if err != nil {
		fmt.Fprintf(e.stderr, "cellb restore: %s: %v\n", cellKey, oneLine(err))
		return 1
	}
	fmt.Fprintf(e.stdout, "restored %s at TXID %d (epoch %d, %d files, %s) to %s\n",
		cellKey, res.TXID, res.Epoch, len(res.Files), size(n), out)
	return 0
}

// restoreToFile restores straight into a temporary file next to out —
// pages land at their offsets as they are decoded, so no image-sized buffer
// is needed — then makes it out atomically (writeAtomically).
func restoreToFile(ctx context.Context, s store.Store, cellKey string, opts ltxlog.RestoreOptions, out string) (*ltxlog.Result, int64, error) {
	var res *ltxlog.Result
	n, err := writeAtomically(out, func(f *os.File) error {
		var err error
		res, err = ltxlog.RestoreTo(ctx, s, cellKey, opts, f)
		return err
	})
	return res, n, err
}

// writeAtomically has write fill a temporary file next to out, then makes
// it out: fsync, rename, fsync of the directory. A failure leaves out
// untouched. It returns the file's size.
func writeAtomically(out string, write func(f *os.File) error) (int64, error) {
	dir := filepath.Dir(out)
	f, err := os.CreateTemp(dir, "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := write(f); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return 0, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	return st.Size(), d.Sync()
}

// parseTime accepts RFC 3339 or Unix milliseconds.
func parseTime(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
