// Package kvvalue is the value encoding of a cell's key-value storage,
// byte-compatible with celld and workerd: what core/cell's KV writes to
// and reads from the v column of celld's _cf_KV table.
//
// CellB writes JSON text (ToColumn); celld, through workerd's storage API,
// writes blobs in V8's value serialization format, which FromColumn tells
// apart and DecodeV8 decodes into plain Go values. docs/kv-values.md maps
// every V8 tag to what it decodes to.
//
// The package is a format, like core/ltx and core/wal: it does no I/O and
// imports no port and nothing of the runtime.
package kvvalue
