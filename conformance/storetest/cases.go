package storetest

// allCases is the suite, in the order it runs. Cheap, fundamental checks
// come first so a badly broken store fails fast and obviously.
var allCases = []testCase{
	{name: "probe", summary: "celld's start-up probe: create-only twice, write with the current and a stale version, delete", run: testProbe},
	{name: "create-only", summary: "a create-only write applies once and is then rejected, from either client, whatever the body", run: testCreateOnly},
	{name: "compare-and-swap", summary: "a write conditioned on the current version applies; on a stale, missing or foreign version it is rejected", run: testCompareAndSwap},
	{name: "delete-recreate-swap", summary: "a version from before a delete and re-create no longer matches: a compare-and-swap on it is rejected", run: testDeleteRecreateSwap},
	{name: "version-changes", summary: "every write of a different body gets a new version, and listings report the version Get does", run: testVersionChanges},
	{name: "get-data", summary: "a body-and-version read (store.GetData, as the fleet reads its ownership records) gives what the latest write left, from either client; a missing key is ErrNotFound", run: testGetData},
	{name: "read-after-write", summary: "a write is visible at once to both clients, byte for byte, for keys with unusual characters", run: testReadAfterWrite},
	{name: "list-after-write", summary: "creates, replacements and deletes are visible at once in listings from both clients", run: testListAfterWrite},
	{name: "delete", summary: "deleting a missing key succeeds; a deleted key is gone from Get and List and its neighbours stay, keys it is a prefix of too", run: testDelete},
	{name: "list-order", summary: "listings are in byte order (not case-insensitive, natural or path order) and prefixes need not end at a '/'", run: testListOrder},
	{name: "delimiter", summary: "a delimiter folds deeper keys into common prefixes, with and without pagination", run: testDelimiter},
	{name: "object-and-prefix", summary: "\"x\" and \"x/y\" can both be objects, or the store refuses the nesting cleanly with ErrInvalidKey", run: testObjectAndPrefix},
	{name: "concurrent-siblings", summary: "many keys of one directory created, replaced and deleted at the same time all succeed", run: testConcurrentSiblings},
	{name: "pagination", summary: "listings of more than 1,000 keys page correctly at several limits: no page over its limit, no duplicates, no omissions", run: testPagination},
	{name: "metadata", summary: "metadata round-trips exactly, is replaced by an overwrite, and bad metadata is rejected without writing", run: testMetadata},
	{name: "content-headers", summary: "the five HTTP content headers round-trip through Get, stream and empty-range reads, are replaced by an overwrite, and bad values are rejected without writing", run: testContentHeaders},
	{name: "headers-conditional", summary: "content headers go with create-only and compare-and-swap writes, whole and streamed; a failed condition keeps the old ones", run: testHeadersConditional},
	{name: "gzip-body", summary: "an object stored with Content-Encoding gzip reads back byte for byte compressed, at its stored size", run: testGzipBody},
	{name: "invalid-keys", summary: "malformed keys and prefixes are rejected with ErrInvalidKey and nothing is written", run: testInvalidKeys},
	{name: "context-cancel", summary: "a cancelled or expired context makes every call fail promptly with the context's error", run: testContextCancel},
	{name: "stream-put", summary: "streamed puts of unknown and known size round-trip byte for byte across part boundaries; a body shorter or longer than declared writes nothing", run: testStreamPut},
	{name: "stream-range", summary: "a ranged read gives exactly its bytes (first, last, across a part boundary, cut at the end) and a range past the end is ErrInvalidRange", run: testStreamRange},
	{name: "stream-failure", summary: "a body whose reader fails, or whose context ends, mid-stream leaves no object, or the previous one intact", run: testStreamFailure},
	{name: "stream-conditions", summary: "create-only and compare-and-swap hold for streamed bodies: a lost condition writes nothing", run: testStreamConditions},
	{name: "large-object", summary: "a large object (64 MiB unless lowered) round-trips byte for byte", slow: true, run: testLargeObject},
	{name: "contention-create", summary: "goroutines racing create-only on one key: exactly one winner per round", slow: true, run: testContentionCreate},
	{name: "contention-cas", summary: "goroutines racing a write on one version: exactly one winner per round", slow: true, run: testContentionCAS},
	{name: "no-lost-update", summary: "a counter incremented by compare-and-swap loops ends at exactly the number of successful increments", slow: true, run: testNoLostUpdate},
}
