// Package wake reads and writes celld's wake index, format 2, and holds the
// pure decisions around it: which entries are obsolete, whether to write a
// retirement certificate, who holds the waker role, which due cells this
// node wakes, which minute buckets are due. Nothing here does I/O or reads
// the clock; the service that polls the bucket passes in what it read and
// the time.
//
// The bucket keys (celld ≥ 0.5):
//
//	wake/entries/<YYYY-MM-DDTHH:MM>/<cell>/<epoch:016x>-<seq:016x>   Entry, plain PUT, plain DELETE
//	wake/entries/1970-01-01T00:00/<cell>/migration                     migration seed (identity 0,0)
//	wake/retired/<cell>.json                                           Retired, create-only or If-Match
//	wake/format.json                                                   FormatRecord, create-only then If-Match
//	wake/waker.json                                                    WakerRecord, create-only or If-Match
//
// An entry is only a hint: it makes the owner read the cell's SQLite
// alarm, which alone decides whether a handler runs. Each installation of
// an alarm has its own immutable key, named by the writer's ownership
// epoch and the cell's persistent alarm sequence, so deleting an old key
// can never remove a newer installation. Entries are deleted only once a
// retirement certificate makes them obsolete (Obsolete).
//
// Malformed records are *layout.RecordError (errors.Is(err,
// layout.ErrMalformedRecord)), shared with the other celld records; malformed
// keys are *KeyError (ErrMalformedKey).
//
// # Where celld's code and the spec text differ
//
// The formats follow celld 0.5.1's code (crates/logic/wake.rs,
// crates/celld/wake.rs, crates/celld/wake_format.rs). Where that code and
// the spec's prose disagree, the code wins:
//
//   - Entry bodies are built with serde_json's json! macro. celld does not
//     enable serde_json's preserve_order feature (its lock file has no
//     indexmap under serde_json), so the members are written sorted:
//     {"cell":…,"due_ms":…,"format":2,"identity":…} and
//     {"cell":…,"format":2,"migration_seed":true}, not "format" first.
//   - celld never reads entry bodies; its inventory is the LIST of keys.
//     DecodeEntry's strictness (exactly those two shapes, agreeing with the
//     key) is CellB's own.
//   - An identity with epoch 0 is rejected wherever it is parsed, as
//     celld's parser does; only the "migration" leaf stands for (0,0).
//   - A cell key needs only celld's charset fence (1–255 bytes of
//     [A-Za-z0-9_.:$-], not "." or ".."); celld does not require the ':'.
//   - A retirement certificate without "at_ms" reads as at_ms null (serde
//     defaults an absent Option); a negative at_ms is rejected.
//   - The waker record is not strict in celld: unknown members are
//     ignored, and an unreadable record is treated as expired. expires_ms
//     is an i64 there; here it is a uint64 no larger than 2^63-1.
//   - A format marker that says "migrating" does not stop startup: celld
//     has every starter finish the interrupted migration (FormatResume).
//   - DuePrefixes wants exactly one trailing '/' on a listed prefix, as a
//     delimiter LIST returns it; celld trims any number of them.
//   - serde would also accept a struct written as a JSON array; the
//     decoders here accept objects only (celld writes objects only).
package wake
