package durability

// BucketAcker is implemented by a Log whose Durable resolves only once the
// commit is stored in the bucket (the LTX and changeset logs, with or
// without a node log): an acknowledged commit can then be restored from the
// bucket whatever the local disk lost. A single-host runtime relies on it
// to leave the local file unsynced per commit and rebuild the cell from the
// bucket after a machine restart instead (core/cell's restart mark). Local
// and backups do not implement it.
type BucketAcker interface {
	AcksFromBucket() bool
}

// AcksFromBucket reports whether l acknowledges commits only once they are
// in the bucket (BucketAcker).
func AcksFromBucket(l Log) bool {
	a, ok := l.(BucketAcker)
	return ok && a.AcksFromBucket()
}
