// Package layout names every key CellB reads or writes in a bucket, and
// decodes the JSON records celld and CellB share. It is the one place the
// bucket layout is spelled; every other package builds its keys here (the
// layering test core/internal/layering fails on a key literal elsewhere).
//
//	cells/<cell>/own.json                          OwnKey, OwnRecord
//	cells/<cell>/ltx/e<epoch>/<level:04x>/<min:016x>-<max:016x>.ltx
//	                                               LTX(), LTXKey, ParseLTXKey
//	cells/<cell>/changeset/e<epoch>/<min:016x>-<max:016x>.{cset,snap}
//	                                               Changeset(), ChangesetKey
//	cells/<cell>/backup/e<epoch>/<seq:016x>.db     Backup(), BackupKey
//	nodes/<node>.json                              NodeKey, NodeLease
//	wake/format.json                               WakeFormatKey
//	wake/waker.json                                WakerKey
//	wake/entries/<minute>/<cell>/<identity>        WakeEntriesPrefix, WakeEntryKey
//	wake/retired/<cell>.json                       WakeRetiredKey
//	fleet/peer-auth.json                           PeerAuthKey
//	probe/cas-<ns>-<tag>-<random:016x>             ProbeKey
//	r2/<bucket>/<key>                              R2Key
//	log/<node>/<generation>/bundle/e<logepoch>-<seq:08>.ltxb
//	                                               BundleKey, ParseBundleKey
//	log/<node>/<generation>.e<logepoch>.loss.json  LossKey
//
// The package imports no other CellB package: the formats (core/ltx), the
// ports and the fleet all depend on it, never the other way round.
package layout
