// Package migrate moves an existing SQLite database into a CellB cell that
// has never been written (docs/migrating.md): a database file, or the
// newest state of a Litestream replica.
//
// Import takes the cell as any activation would — under a temporary fleet
// node by celld's ownership protocol on a fleet's bucket, or by the cell's
// shard lock on one host — refuses a cell that holds anything already
// (*CellWrittenError), writes the database as the snapshot that opens the
// epoch it was granted (cells/<cell>/ltx/e<epoch>/0000/…01-…01.ltx,
// create-only, encoded page by page while it uploads, so memory does not
// grow with the database), confirms the grant, and releases the cell. The
// next activation, by `cellb serve` or celld, takes a newer epoch and
// restores that snapshot, as after any owner that released its cell.
package migrate
