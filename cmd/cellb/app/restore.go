package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/cli"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/progress"
	"github.com/cellb/cellb/core/store"
)

func restoreCommand() appCommand {
	return command("restore", "rebuild a cell's database from a bucket (read-only)",
		func(ctx context.Context, e *env, args []string) int {
			return restoreCmd(ctx, e, args, e.buckets())
		})
}

const restoreAbout = `Rebuilds the cell's SQLite database from what the bucket keeps of it and
writes it to out.db. It only reads the bucket: it never takes ownership,
so it is safe while nodes serve the cell. Progress goes to stderr, from 0%.

--from picks the source (default: the one the bucket holds for the cell;
name one when it holds several): ltx, the LTX log (any TXID or time with
--txid or --time, which takes RFC 3339 such as 2026-05-30T02:46:41Z or Unix
milliseconds); changeset, the changeset log (its newest state); backup, the
newest whole-database backup. --bookmark restores the state a bookmark
names (State.CurrentBookmark, State.BookmarkForTime, or the counter's
GET /counter/<name>/bookmark: <epoch>-<txid>, 16 hex digits each), which
may be in an older epoch than the newest (ltx only). Without --txid, --time
and --bookmark the newest state is restored; TXIDs start at 1, so --txid 0
is refused.`

func restoreCmd(ctx context.Context, e *env, args []string, mux *store.URLMux) int {
	modes := durabilityModes()
	cl := newCmdLine("restore", "<bucket-url> <Class:id> <out.db>", restoreAbout, 3, 3, "<bucket-url> <Class:id> <out.db>")
	txid := cl.Flags.Uint64("txid", 0, "restore exactly this transaction (1 or more; ltx only)")
	at := cl.Flags.String("time", "", "restore the newest state at or before this `time` (RFC 3339 or Unix ms; ltx only)")
	bookmark := cl.Flags.String("bookmark", "", "restore the state this `bookmark` names (<epoch>-<txid>; ltx only)")
	force := cl.Flags.Bool("force", false, "overwrite out.db if it exists")
	from := cl.Flags.String("from", "", "the `log` to restore from: "+modeChoices(modes)+" (default: what the bucket holds)")
	quiet := cl.Flags.Bool("quiet", false, "no progress on stderr")
	resolve := admin.NameFlags(cl.Flags, defaultScriptName)
	pos, code, done := cl.Parse(e.stdout, e.stderr, args)
	if done {
		return code
	}
	cellKey, err := resolve(pos[1])
	if err != nil {
		return cl.UsageErr(e.stderr, "%v", err)
	}
	if cl.Set("txid") && *txid == 0 {
		return cl.UsageErr(e.stderr, "--txid 0: TXIDs start at 1; leave --txid out to restore the newest state")
	}
	if *from != "" {
		if _, err := modes.Lookup(*from); err != nil {
			return cl.UsageErr(e.stderr, "--from: %v", err)
		}
	}
	bucketURL, out := pos[0], pos[2]
	req := durability.RestoreRequest{TXID: *txid}
	if *at != "" {
		if *txid != 0 {
			return cl.UsageErr(e.stderr, "give --txid or --time, not both")
		}
		t, err := cli.ParseTime(*at)
		if err != nil {
			return cl.UsageErr(e.stderr, "bad value %q for --time: want RFC 3339 (2026-05-30T02:46:41Z) or Unix milliseconds", *at)
		}
		req.Time = t
	}
	if cl.Set("bookmark") {
		if cl.Set("txid") || *at != "" {
			return cl.UsageErr(e.stderr, "give one of --txid, --time and --bookmark")
		}
		b, err := durability.ParseBookmark(*bookmark)
		if err != nil {
			return cl.UsageErr(e.stderr, "--bookmark: %v", err)
		}
		if b.TXID == 0 {
			return cl.UsageErr(e.stderr, "--bookmark %s names the empty database before the cell's first commit: nothing to restore", *bookmark)
		}
		req.Epoch, req.TXID = b.Epoch, b.TXID
	}
	if !*force {
		if _, err := os.Stat(out); err == nil {
			return cl.Fail(e.stderr, fmt.Errorf("%s exists; pass --force to overwrite it", out))
		}
	}
	if !*quiet {
		req.Progress = progress.NewBar(e.stderr, "restore "+cellKey).Update
	}
	s, err := openBucket(ctx, mux, bucketURL)
	if err != nil {
		return cl.Fail(e.stderr, err)
	}
	defer store.Close(s)
	// The scratch database is modernc's: it has SQLite sessions. A cellb
	// built without it restores the other modes all the same.
	scratch, noSessions := sessionsDriver()
	mode, res, n, err := modes.RestoreToFile(ctx, s, cellKey, out, durability.FileRestore{From: *from, Request: req, ScratchDriver: scratch})
	if err != nil && noSessions != nil && mode.NeedsSessions {
		err = noSessions
	}
	var several *durability.SeveralLogsError
	var npe *durability.NoPointInTimeError
	switch {
	case errors.As(err, &npe):
		return cl.UsageErr(e.stderr, "--txid, --time and --bookmark need a log that restores to a point in time (%s); the %s log restores its newest state",
			strings.Join(modes.PointInTime().Names(), ", "), mode.Name)
	case errors.As(err, &several):
		return cl.Fail(e.stderr, fmt.Errorf("%s: %w with --from", cellKey, err))
	case err != nil:
		return cl.Fail(e.stderr, fmt.Errorf("%s: %w", cellKey, err))
	}
	fmt.Fprintf(e.stdout, "restored %s from %s (%s) to %s\n", cellKey, res.From, progress.Size(n), out)
	return 0
}
