// Package shard implements the Lease port for processes on one machine that
// share a data directory: the single-host counterpart of a browser origin's
// Web Locks.
//
// Of places every cell in one of n shards by a fixed hash of its key. Shard
// i is an exclusive flock(2) on <dir>/shard-<i>.lock. A process holds a
// shard's lock while it holds a grant for any cell of that shard and lets
// it go with the last one, so another process may take the shard as soon
// as this one has released, closed or died: the kernel drops the lock of a
// process that exits for any reason.
//
// The same file carries the shard's epoch counter. Every grant takes the
// next epoch and writes it to the file, synced, before it is handed out, so
// epochs grow across processes and restarts and each epoch has one writer.
// The local database files are the primary copy on one host, so grants
// report BucketWins() false.
//
// Locks belong to an open file, not to a process: two Leases opened on one
// directory in the same process exclude each other exactly like two
// processes do, which is how the tests run several participants at once.
package shard
