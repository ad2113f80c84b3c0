package admin

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/progress"
	"github.com/cellb/cellb/core/store"
)

// ResolveCell turns a command-line cell argument into a cell key. Without
// byName, arg is a cell key "<Class>:<id>" and is checked against celld's
// fence. With byName, arg is "<Class>:<name>" and the id is the one
// IDFromName gives name in class Class of the deployment script (what a
// node serving that script gives the name).
func ResolveCell(arg string, byName bool, script string) (string, error) {
	if !byName {
		return arg, checkCellKey(arg)
	}
	class, name, ok := strings.Cut(arg, ":")
	if !ok || class == "" {
		return "", &cell.InvalidCellKeyError{Key: arg, Reason: "with --name it is <Class>:<name>"}
	}
	key := cell.CellKey(class, cell.IDFromName(script, class, name))
	return key, cell.ValidateCellKey(key)
}

// checkCellKey accepts "<Class>:<id>" with a non-empty class and id. The
// id is not required to be 64 hex digits (celld's keys need not be: its
// golden vectors use "Golden:kv"); a cell the bucket lacks whose id is not
// one gets the hint to --name (NoCellError).
func checkCellKey(arg string) error {
	if err := cell.ValidateCellKey(arg); err != nil {
		return err
	}
	class, id, ok := strings.Cut(arg, ":")
	switch {
	case !ok:
		return &cell.InvalidCellKeyError{Key: arg, Reason: "it is not <Class>:<id>; to name a cell by its name, use --name <Class>:<name>"}
	case class == "":
		return &cell.InvalidCellKeyError{Key: arg, Reason: "the class before ':' is empty"}
	case id == "":
		return &cell.InvalidCellKeyError{Key: arg, Reason: "the id after ':' is empty"}
	}
	return nil
}

func isID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// IDFromName is the id (64 hex digits) name gets in class of deployment
// script, as a node serving script gives it.
func IDFromName(script, class, name string) (string, error) {
	if strings.Contains(class, ":") {
		return "", &cell.InvalidCellKeyError{Key: class, Reason: "a class name has no ':'"}
	}
	key, err := ResolveCell(class+":"+name, true, script)
	return strings.TrimPrefix(key, class+":"), err
}

// Show inspects the bucket (cell "") or one cell and writes it to w, as
// text or as indented JSON. When records of a whole-bucket report did not
// decode or could not be read, it writes the report all the same and then
// returns a *ProblemsError; when it shows a finding, a *FindingsError.
func Show(ctx context.Context, s store.Store, cell string, asJSON bool, opts Options, w io.Writer) error {
	problems, findings, err := show(ctx, s, cell, asJSON, opts, w)
	switch {
	case err != nil:
		return err
	case len(problems) > 0:
		return &ProblemsError{Errs: problems}
	}
	return findings
}

// show writes the report; problems are the records it could not read,
// findings a *FindingsError when a cell has one.
func show(ctx context.Context, s store.Store, cell string, asJSON bool, opts Options, w io.Writer) (problems []error, findings, err error) {
	var out any
	if cell != "" {
		c, err := InspectCell(ctx, s, cell, opts)
		if err != nil {
			return nil, nil, err
		}
		out, findings = c, findingsOf(c)
		if !asJSON {
			WriteCell(w, c, opts.clock().Now().UnixMilli())
		}
	} else {
		r, err := Inspect(ctx, s, opts)
		if err != nil {
			return nil, nil, err
		}
		cells := make([]*Cell, len(r.Cells))
		for i := range r.Cells {
			cells[i] = &r.Cells[i]
		}
		out, problems, findings = r, r.Errors(), findingsOf(cells...)
		if !asJSON {
			WriteReport(w, r)
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return problems, findings, enc.Encode(out)
	}
	return problems, findings, nil
}

// WriteReport writes a report for people: nodes, cells, the wake index,
// then every error.
func WriteReport(w io.Writer, r *Report) {
	now := time.UnixMilli(r.NowMs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "NODE\tSTATE\tADDR\tEXPIRES\tNODE LOG\tUNTIERED\tOLDEST UNTIERED\n")
	for _, n := range r.Nodes {
		state := "expired"
		switch {
		case n.Err != nil:
			state = "unreadable"
		case n.Live:
			state = "live"
		}
		logState, untiered, oldest := "-", "-", "-"
		if l := n.Log; l != nil {
			logState = fmt.Sprintf("%s, epoch %d", l.State, l.Epoch)
			if l.Active {
				logState += ", active"
			}
			if l.Claimant != "" {
				logState += ", claimed by " + l.Claimant
			}
			untiered = fmt.Sprintf("%d bundles, %s", l.Bundles, progress.Size(l.BundleBytes))
			if l.OldestBundleMs != nil {
				oldest = when(*l.OldestBundleMs, now)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.ID, state, dash(n.Addr), when(int64(n.ExpiresMs), now), logState, untiered, oldest)
	}
	for _, l := range r.HostLogs {
		oldest := "-"
		if l.OldestBundleMs != nil {
			oldest = when(*l.OldestBundleMs, now)
		}
		fmt.Fprintf(tw, "%s/%s\tsingle host\t-\t-\t%s\t%d bundles, %s\t%s\n", l.Node, l.Generation, l.State, l.Bundles, progress.Size(l.BundleBytes), oldest)
	}
	fmt.Fprintf(tw, "\nCELL\tRECORD\tOWNER\tEPOCH\tLOG EPOCH\tTXID\tLOG\tMODES\tALARM\tFINDINGS\n")
	for _, c := range r.Cells {
		var kinds []string
		for _, f := range c.Findings {
			kinds = append(kinds, f.Kind)
		}
		if c.Err != nil && c.Record != RecordMalformed {
			kinds = append(kinds, "unreadable")
		}
		alarm := "-"
		if c.AlarmDueMs != nil {
			alarm = when(*c.AlarmDueMs, now)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s in %d\t%s\t%s\t%s\n", c.Key, c.Record, owner(c), c.Epoch, c.LogEpoch,
			c.NewestTXID, progress.Size(c.LogBytes), c.LogObjects, dash(strings.Join(c.Modes, ",")), alarm, dash(strings.Join(kinds, ",")))
	}
	tw.Flush()
	wk := r.Wake
	format := "no format marker"
	if wk.Format != nil {
		format = fmt.Sprintf("format %d", *wk.Format)
		if wk.Migrating {
			format += " (migrating)"
		}
	}
	waker := "no waker"
	if wk.Waker != "" {
		waker = fmt.Sprintf("waker %s (expired %s)", wk.Waker, when(int64(wk.WakerExpiresMs), now))
		if wk.WakerLive {
			waker = fmt.Sprintf("waker %s (live until %s)", wk.Waker, when(int64(wk.WakerExpiresMs), now))
		}
	}
	fmt.Fprintf(w, "\nwake index: %s; %s; %d entries (%d due, %d migration seeds) in %d minutes for %d cells; %d retirement certificates\n",
		format, waker, wk.Entries, wk.Due, wk.Seeds, wk.Minutes, wk.Cells, wk.Retired)
	fmt.Fprintf(w, "%d nodes, %d cells\n", len(r.Nodes), len(r.Cells))
	if len(r.HostLogs) > 0 {
		fmt.Fprintf(w, "%d single host node log sessions (their state is their lock file's under <data-dir>/shards/nodelog; unknown when inspect was not given it)\n", len(r.HostLogs))
	}
	if !r.Fleet && len(r.Cells) > 0 {
		fmt.Fprintf(w, "no node lease and no ownership record: a single-host bucket (ownership by shard locks; records are written by fleet nodes only)\n")
	}
	if errs := r.Errors(); len(errs) > 0 {
		fmt.Fprintf(w, "\n%d errors:\n", len(errs))
		for _, err := range errs {
			fmt.Fprintf(w, "  %v\n", err)
		}
	}
}

// WriteCell writes one cell in detail for people.
func WriteCell(w io.Writer, c *Cell, nowMs int64) {
	now := time.UnixMilli(nowMs)
	fmt.Fprintf(w, "cell        %s\n", c.Key)
	switch c.Record {
	case RecordHeld, RecordReleased:
		fmt.Fprintf(w, "record      %s by %s at epoch %d\n", c.Record, owner(*c), c.Epoch)
	default:
		fmt.Fprintf(w, "record      %s\n", c.Record)
	}
	fmt.Fprintf(w, "log         newest epoch %d, newest TXID %d, %s in %d objects\n", c.LogEpoch, c.NewestTXID, progress.Size(c.LogBytes), c.LogObjects)
	for _, l := range c.Logs {
		fmt.Fprintf(w, "  %s\n", l.Mode)
		for _, e := range l.Epochs {
			fmt.Fprintf(w, "    e%d: %d..%d, %s in %d objects\n", e.Epoch, e.First, e.Newest, progress.Size(e.Bytes), e.Objects)
		}
	}
	alarm := "none"
	if c.AlarmDueMs != nil {
		alarm = when(*c.AlarmDueMs, now)
	}
	fmt.Fprintf(w, "alarm       %s\n", alarm)
	writeFindings(w, c)
}

func writeFindings(w io.Writer, c *Cell) {
	if len(c.Findings) == 0 && c.Err == nil {
		fmt.Fprintf(w, "findings    none: healthy\n")
	}
	for _, f := range c.Findings {
		fmt.Fprintf(w, "finding     %s: %s\n", f.Kind, f.Message)
	}
	if c.Err != nil && c.Record != RecordMalformed {
		fmt.Fprintf(w, "error       %v\n", c.Err)
	}
}

// Repair diagnoses cell, writes the diagnosis and the repair to w, and,
// with apply, writes the repair. It returns nil when the cell is healthy,
// when the dry run found a repair, or when the repair was written and
// nothing else is wrong; otherwise the error of Diagnose or Apply.
func Repair(ctx context.Context, s store.Store, cell string, apply bool, opts Options, w io.Writer) error {
	p, err := Diagnose(ctx, s, cell, opts)
	if p == nil {
		return err
	}
	fmt.Fprintf(w, "cell        %s\nrecord      %s", cell, p.Cell.Record)
	if p.Cell.Record == RecordHeld || p.Cell.Record == RecordReleased {
		fmt.Fprintf(w, " by %s at epoch %d", owner(*p.Cell), p.Cell.Epoch)
	}
	fmt.Fprintf(w, "\nlog         newest epoch %d\n", p.Cell.LogEpoch)
	writeFindings(w, p.Cell)
	if p.Write == nil {
		return err
	}
	how := "create-only"
	if p.Condition.Kind == store.MatchVersion {
		how = "if its version is still " + string(p.Condition.Version)
	}
	if !apply {
		fmt.Fprintf(w, "repair      would write %s to %s (%s); run again with --apply to write it\n", p.Write.Encode(), p.Key, how)
		return err
	}
	if _, werr := Apply(ctx, s, p); werr != nil {
		return errors.Join(werr, err)
	}
	fmt.Fprintf(w, "repair      wrote %s to %s (%s)\n", p.Write.Encode(), p.Key, how)
	return err
}

func owner(c Cell) string {
	switch {
	case c.Record == RecordReleased:
		return "nobody"
	case c.Owner == "":
		return "-"
	case c.OwnerLive:
		return c.Owner + " (live)"
	}
	return c.Owner + " (not live)"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when spells a Unix-ms time with its distance from now.
func when(ms int64, now time.Time) string {
	if ms == 0 {
		return "0 (released)"
	}
	t := time.UnixMilli(ms)
	d := t.Sub(now).Round(time.Second)
	if d >= 0 {
		return fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339), d)
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), -d)
}

// NameFlags registers --name and --script-name on fs and returns what
// reads a cell argument by them (ResolveCell): with --name it is
// <Class>:<name>, resolved in deployment --script-name (default
// defaultScript), else a cell key <Class>:<id>.
func NameFlags(fs *flag.FlagSet, defaultScript string) func(arg string) (string, error) {
	byName := fs.Bool("name", false, "the cell argument is <Class>:<name>, not <Class>:<id>")
	script := fs.String("script-name", defaultScript, "deployment name --name resolves with (serve's --script)")
	return func(arg string) (string, error) { return ResolveCell(arg, *byName, *script) }
}
