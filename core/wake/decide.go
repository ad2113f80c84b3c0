package wake

import (
	"slices"
	"strings"

	"github.com/cellb/cellb/core/layout"
)

// DecideRetire is one round of celld's certificate CAS loop (at most three
// rounds; re-read after a rejected or ambiguous write). stored is the
// certificate read (nil when absent), ours the one the caller has proved:
// the publication was PUT, the SQLite position is durable, and own.json names
// this node at ours.Identity.Epoch (see MayRetire).
//
//   - no certificate: write ours create-only;
//   - same identity: it must carry the same at_ms (else the identity was
//     reused: *RetireConflictError); nothing to write;
//   - a newer stored identity: it already covers ours; nothing to write;
//   - an older stored identity: write ours If-Match over what was read.
//
// Certificates only move forward, so racing writers converge.
func DecideRetire(stored *Retired, ours Retired) (write bool, err error) {
	if stored == nil {
		return true, nil
	}
	switch c := stored.Identity.Compare(ours.Identity); {
	case c == 0:
		if !sameAtMs(stored.AtMs, ours.AtMs) {
			return false, &RetireConflictError{Identity: ours.Identity, StoredAtMs: stored.AtMs, OursAtMs: ours.AtMs}
		}
		return false, nil
	case c > 0:
		return false, nil
	}
	return true, nil
}

// MayRetire reports whether own.json (nil when absent) still gives this node
// writer authority over the epoch of id, the last proof before a
// certificate may be written: a node that lost the cell must not retire what
// the new owner may have published.
func MayRetire(self string, id Identity, own *layout.OwnRecord) bool {
	return own != nil && own.Node == self && own.Epoch == id.Epoch
}

// SupersededEntryKey is the entry the certificate we replaced (previous,
// nil when there was none) was published under, when ours now retires it:
// celld deletes that key eagerly instead of waiting for the collector's
// LIST to reach it. ok is false when there is nothing to delete (no previous
// certificate, it certified "no alarm", or ours does not retire it).
func SupersededEntryKey(cell string, previous *Retired, ours Retired) (key string, ok bool) {
	if previous == nil || previous.AtMs == nil || !Obsolete(previous.Identity, ours) {
		return "", false
	}
	return EntryKey(cell, *previous.AtMs, previous.Identity), true
}

// DecideWake reports whether this node should activate the cell of a due
// entry, given the cell's ownership record (nil when absent) and, when it
// names another node, that node's lease (nil when absent). Activation then
// goes through the ownership protocol, so a wrong "true" costs an owner read,
// never a second writer.
//
//	own.json                         elected  not elected
//	names self                       wake     wake
//	absent                           wake     -
//	released (node "")               wake     -
//	other node, lease missing        wake     -
//	other node, lease expired        wake     -
//	other node, lease live           -        -   (its owner fires it)
//
// A live lease is expires_ms > nowMs (the reader's clock), as celld reads it.
// When the owner read fails, celld's elected node keeps the entry (the
// activation's own resolution decides) and other nodes drop it.
func DecideWake(self string, elected bool, own *layout.OwnRecord, ownerLease *layout.NodeLease, nowMs uint64) bool {
	if own != nil && own.Node == self {
		return true
	}
	if !elected {
		return false
	}
	if own == nil || own.Node == "" {
		return true
	}
	return ownerLease == nil || !ownerLease.Live(nowMs)
}

// DuePrefixes picks, from the minute prefixes a delimiter LIST of
// layout.WakeEntriesPrefix returned (layout.WakeMinutePrefix:
// "wake/entries/<minute>/"), those whose minute has begun by nowMs, sorted (oldest first) and without duplicates. Prefixes
// that are not canonical minutes are dropped: their entries could never be
// parsed anyway. Parsing each prefix, rather than trusting the store's
// order, keeps discovery independent of the provider.
func DuePrefixes(listedMinutePrefixes []string, nowMs int64) []string {
	var due []string
	for _, p := range listedMinutePrefixes {
		minute, ok := strings.CutPrefix(p, layout.WakeEntriesPrefix)
		if !ok {
			continue
		}
		if minute, ok = strings.CutSuffix(minute, "/"); !ok {
			continue
		}
		if ms, ok := parseMinute(minute); ok && ms <= nowMs {
			due = append(due, p)
		}
	}
	slices.Sort(due)
	return slices.Compact(due)
}
