package layout

import "testing"

// TestKeysSpellCelldsLayout pins every key to the spelling of the bucket
// format (spec celld-bucket-format.md): a change here breaks celld
// compatibility.
func TestKeysSpellCelldsLayout(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{CellPrefix("Counter:a"), "cells/Counter:a/"},
		{OwnKey("Counter:a"), "cells/Counter:a/own.json"},
		{NodeKey("node_a"), "nodes/node_a.json"},
		{NodesPrefix, "nodes/"},
		{LTX().Prefix("C:x"), "cells/C:x/ltx/"},
		{LTX().EpochPrefix("C:x", 12), "cells/C:x/ltx/e12/"},
		{LTXLevelPrefix("C:x", 3, 1), "cells/C:x/ltx/e3/0001/"},
		{LTXKey("C:x", 3, 0, 1, 0x2a), "cells/C:x/ltx/e3/0000/0000000000000001-000000000000002a.ltx"},
		{Changeset().EpochPrefix("C:x", 2), "cells/C:x/changeset/e2/"},
		{ChangesetKey("C:x", 2, 1, 5, false), "cells/C:x/changeset/e2/0000000000000001-0000000000000005.cset"},
		{ChangesetKey("C:x", 2, 1, 5, true), "cells/C:x/changeset/e2/0000000000000001-0000000000000005.snap"},
		{BackupKey("C:x", 7, 3), "cells/C:x/backup/e7/0000000000000003.db"},
		{WakeFormatKey, "wake/format.json"},
		{WakerKey, "wake/waker.json"},
		{WakeEntryKey("2026-05-30T02:46", "C:x", "3-7"), "wake/entries/2026-05-30T02:46/C:x/3-7"},
		{WakeMinutePrefix("2026-05-30T02:46"), "wake/entries/2026-05-30T02:46/"},
		{WakeRetiredKey("C:x"), "wake/retired/C:x.json"},
		{PeerAuthKey, "fleet/peer-auth.json"},
		{ProbeKey(17, "node_a", 0xbeef), "probe/cas-17-node_a-000000000000beef"},
		{R2Key("photos", "a/b.png"), "r2/photos/a/b.png"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
	var names []string
	for _, l := range Logs() {
		names = append(names, l.Name+"="+l.Prefix("C"))
	}
	if got := names; len(got) != 3 || got[0] != "ltx=cells/C/ltx/" || got[1] != "changeset=cells/C/changeset/" || got[2] != "backup=cells/C/backup/" {
		t.Errorf("Logs() = %v", got)
	}
}

func TestParseKeys(t *testing.T) {
	if c, ok := CellOfPrefix("cells/Counter:a/"); !ok || c != "Counter:a" {
		t.Errorf("CellOfPrefix: %q %v", c, ok)
	}
	if _, ok := CellOfPrefix("nodes/x/"); ok {
		t.Error("CellOfPrefix accepted nodes/x/")
	}
	if n, ok := NodeOfKey("nodes/node_a.json"); !ok || n != "node_a" {
		t.Errorf("NodeOfKey: %q %v", n, ok)
	}
	if _, ok := NodeOfKey("cells/node_a.json"); ok {
		t.Error("NodeOfKey accepted a key outside nodes/")
	}
	f, ok := ParseLTXKey("cells/C:x/ltx/e3/0001/0000000000000001-000000000000002a.ltx")
	if !ok || f != (LTXFile{Cell: "C:x", Epoch: 3, Level: 1, MinTXID: 1, MaxTXID: 0x2a}) {
		t.Errorf("ParseLTXKey: %+v %v", f, ok)
	}
	for _, bad := range []string{
		"cells/C:x/ltx/e03/0001/0000000000000001-000000000000002a.ltx", // epoch with a leading zero
		"cells/C:x/ltx/e3/000a/0000000000000001-000000000000002a.ltx",  // level above 9
		"cells/C:x/ltx/e3/0001/0000000000000002-0000000000000001.ltx",  // min above max
		"cells/C:x/ltx/e3/0001/0000000000000000-0000000000000001.ltx",  // min 0
		"cells/C:x/changeset/e3/0001/0000000000000001-000000000000002a.ltx",
		"cells//ltx/e3/0001/0000000000000001-000000000000002a.ltx",
		"cells/C:x/ltx/e3/0001/0000000000000001-000000000000002a.ltx.tmp",
	} {
		if f, ok := ParseLTXKey(bad); ok {
			t.Errorf("ParseLTXKey(%q) = %+v", bad, f)
		}
	}
	if cf, ok := ParseChangesetKey("C:x", 2, "cells/C:x/changeset/e2/0000000000000001-0000000000000005.snap"); !ok || cf != (ChangesetFile{MinSeq: 1, MaxSeq: 5, Snapshot: true}) {
		t.Errorf("ParseChangesetKey: %+v %v", cf, ok)
	}
	if _, ok := ParseChangesetKey("C:x", 2, "cells/C:x/changeset/e2/000000000000000A-000000000000000B.cset"); ok {
		t.Error("ParseChangesetKey accepted upper-case hex")
	}
	if bf, ok := ParseBackupKey("C:x", "cells/C:x/backup/e7/0000000000000003.db"); !ok || bf != (BackupFile{Epoch: 7, Seq: 3}) {
		t.Errorf("ParseBackupKey: %+v %v", bf, ok)
	}
	if _, ok := ParseBackupKey("C:x", "cells/C:x/backup/e07/0000000000000003.db"); ok {
		t.Error("ParseBackupKey accepted an epoch with a leading zero")
	}
}

func TestEpochOfKeyAndRetiredCell(t *testing.T) {
	if e, ok := Changeset().EpochOfKey("C:x", "cells/C:x/changeset/e12/0000000000000001-0000000000000005.cset"); !ok || e != 12 {
		t.Errorf("EpochOfKey: %d %v", e, ok)
	}
	for _, bad := range []string{"cells/C:x/ltx/e12/x", "cells/C:x/changeset/e012/x", "cells/C:x/changeset/e12", "cells/C:y/changeset/e1/x"} {
		if e, ok := Changeset().EpochOfKey("C:x", bad); ok {
			t.Errorf("EpochOfKey(%q) = %d", bad, e)
		}
	}
	if c, ok := CellOfWakeRetiredKey("wake/retired/C:x.json"); !ok || c != "C:x" {
		t.Errorf("CellOfWakeRetiredKey: %q %v", c, ok)
	}
	for _, bad := range []string{"wake/retired/C:x", "wake/retired/.json", "wake/retired/a/b.json", "wake/entries/C:x.json"} {
		if c, ok := CellOfWakeRetiredKey(bad); ok {
			t.Errorf("CellOfWakeRetiredKey(%q) = %q", bad, c)
		}
	}
}
