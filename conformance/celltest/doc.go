// Package celltest is the conformance suite of CellB's cell semantics:
// what every cell must guarantee whatever SQLite driver (and store) it
// runs on. Each driver module runs it on itself:
//
//	func TestCellSemantics(t *testing.T) {
//		celltest.Run(t, celltest.Harness{Driver: mydriver.New()})
//	}
//
// The cases cover the atomicity of a turn, interleaving only at yields,
// the FIFO input gate, the output gate (with ControlLog, a durability.Log
// whose durability the test decides), resets, savepoints, KV and its
// listing, the SQL authorizer, the whole alarm timeline on a fake clock,
// the lifecycle (idle eviction, Close, EvictAll), and activations where the
// bucket wins, with the LTX log, the changeset log and backups on an
// in-memory bucket (an empty bucket starts the cell empty; the bucket's
// newest state replaces a stale local file; later LTX files carry only
// changed pages). A case that needs a capability the driver lacks is
// reported as skipped. WithoutPageCapture runs the suite on the runtime's
// commit-time-image path.
//
// The suite also ships negative twins: wrappers that break one guarantee
// the way a faulty driver or log would (a driver that commits every
// statement on its own, a log that acknowledges before durability, ...).
// RunTwins shows that the suite rejects each of them; run it next to Run.
package celltest
