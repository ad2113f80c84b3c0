package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/progress"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/modernc"
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

// restoreUsage is restore's usage text; the choices of --from come from
// modes.
func restoreUsage(modes durability.Modes) string {
	return fmt.Sprintf(restoreUsageText, modeChoices(modes))
}

const restoreUsageText = `usage: cellb restore <bucket-url> <Class:id> <out.db> [--from %s]
                    [--txid N | --time T] [--force] [--name [--script-name S]]

Rebuilds the cell's SQLite database from what the bucket keeps of it and
writes it to out.db. It only reads the bucket: it never takes ownership,
so it is safe while nodes serve the cell.

--from picks the source (default: the one the bucket holds for the cell;
name one when it holds several): ltx, the LTX log (any TXID or time with
--txid or --time, which takes RFC 3339 such as 2026-05-30T02:46:41Z or Unix
milliseconds); changeset, the changeset log (its newest state); backup, the
newest whole-database backup.`

func restoreCmd(ctx context.Context, e *env, args []string, mux *store.URLMux) int {
	modes := durabilityModes()
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	txid := fs.Uint64("txid", 0, "restore exactly this transaction")
	at := fs.String("time", "", "restore the newest state at or before this time")
	force := fs.Bool("force", false, "overwrite out.db if it exists")
	from := fs.String("from", "", strings.Join(modes.Names(), ", ")+" (default: what the bucket holds)")
	quiet := fs.Bool("quiet", false, "no progress output")
	resolve := admin.NameFlags(fs, defaultScriptName)
	pos, cellKey, code, ok := cmdArgs(e, fs, restoreUsage(modes), args, 3, 3, resolve)
	if !ok {
		return code
	}
	bucketURL, out := pos[0], pos[2]
	req := durability.RestoreRequest{TXID: *txid}
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
		req.Time = t
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
	mode, err := pickRestoreMode(ctx, modes, s, cellKey, *from)
	if err != nil {
		fmt.Fprintf(e.stderr, "cellb restore: %s: %v\n", cellKey, err)
		return 1
	}
	if !mode.PointInTime && (*txid != 0 || *at != "") {
		fmt.Fprintf(e.stderr, "cellb restore: --txid and --time need a log that restores to a point in time (%s); the %s log restores its newest state\n",
			strings.Join(modes.PointInTime().Names(), ", "), mode.Name)
		return 2
	}
	if !*quiet {
		req.Progress = progress.NewBar(e.stderr, "restore "+cellKey).Update
	}
	// The scratch database is modernc's: it has SQLite sessions.
	scratch, cleanup := durability.ScratchNextTo(out, modernc.New(modernc.Options{}))
	defer cleanup()
	req.Scratch = scratch
	res, n, err := mode.RestoreFile(ctx, s, cellKey, req, out)
	if err != nil {
		fmt.Fprintf(e.stderr, "cellb restore: %s: %v\n", cellKey, oneLine(err))
		return 1
	}
	fmt.Fprintf(e.stdout, "restored %s from %s (%s) to %s\n", cellKey, res.From, progress.Size(n), out)
	return 0
}

// pickRestoreMode returns the mode named by from, or, when from is empty,
// the one mode whose log the bucket holds for the cell.
func pickRestoreMode(ctx context.Context, modes durability.Modes, s store.Store, cellKey, from string) (durability.Mode, error) {
	if from != "" {
		m, err := modes.Lookup(from)
		if err != nil {
			return m, fmt.Errorf("--from: %w", err)
		}
		return m, nil
	}
	m, err := modes.Detect(ctx, s, cellKey)
	var several *durability.SeveralLogsError
	if errors.As(err, &several) {
		return m, fmt.Errorf("%w with --from", err)
	}
	return m, err
}

// parseTime accepts RFC 3339 or Unix milliseconds.
func parseTime(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
