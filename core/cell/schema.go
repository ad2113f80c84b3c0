package cell

// The runtime's own statements carry this marker so that a driver caching
// prepared statements by text never hands a statement the runtime prepared
// (with the authorizer off) to user code.
const rtSQL = "/*cellb*/ "

// schemaSQL creates celld's tables exactly as celld does, so a cell
// database moves between celld and CellB unchanged (_cf_FACETS is celld
// 0.5's store of facet images; CellB has no facets and leaves it empty,
// but creates it so both sides see one schema). It includes _cf_WAKE,
// the alarm's installation identity, and the three triggers that keep it in
// step with _cf_ALARM inside the very transaction that changes the alarm
// (see wakerecord.go): identity can only be atomic with the alarm if SQLite
// itself maintains it, including on rollback and on the runtime's retry and
// settle statements. Existing databases get them on their next open.
const schemaSQL = rtSQL + `CREATE TABLE IF NOT EXISTS _cf_KV(scope TEXT, k TEXT, v TEXT, PRIMARY KEY(scope,k));
CREATE TABLE IF NOT EXISTS _cf_ALARM(scope TEXT PRIMARY KEY, at_ms INTEGER, retry INTEGER DEFAULT 0, counted_retry INTEGER NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS _cf_METADATA(scope TEXT PRIMARY KEY, actor_name TEXT);
CREATE TABLE IF NOT EXISTS _cf_FACETS(scope TEXT NOT NULL, path TEXT NOT NULL, image BLOB NOT NULL, PRIMARY KEY(scope,path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _cf_WAKE(scope TEXT PRIMARY KEY, epoch TEXT NOT NULL CHECK(length(epoch)=16), sequence INTEGER NOT NULL CHECK(typeof(sequence)='integer' AND sequence>=0), at_ms INTEGER);
CREATE TRIGGER IF NOT EXISTS _cf_WAKE_insert AFTER INSERT ON _cf_ALARM BEGIN UPDATE _cf_WAKE SET sequence=sequence+1,at_ms=NEW.at_ms WHERE scope=NEW.scope; END;
CREATE TRIGGER IF NOT EXISTS _cf_WAKE_update AFTER UPDATE OF at_ms,generation ON _cf_ALARM BEGIN UPDATE _cf_WAKE SET sequence=sequence+1,at_ms=NEW.at_ms WHERE scope=NEW.scope; END;
CREATE TRIGGER IF NOT EXISTS _cf_WAKE_delete AFTER DELETE ON _cf_ALARM BEGIN UPDATE _cf_WAKE SET sequence=sequence+1,at_ms=NULL WHERE scope=OLD.scope; END;`

const (
	sqlPutMetadata = rtSQL + `INSERT INTO _cf_METADATA(scope, actor_name) VALUES(?, ?) ON CONFLICT(scope) DO NOTHING`
	sqlChangeMark  = rtSQL + `SELECT total_changes(), (SELECT schema_version FROM pragma_schema_version), (SELECT user_version FROM pragma_user_version)`

	sqlKVGet       = rtSQL + `SELECT v FROM _cf_KV WHERE scope = ? AND k = ?`
	sqlKVPut       = rtSQL + `INSERT INTO _cf_KV(scope, k, v) VALUES(?, ?, ?) ON CONFLICT(scope, k) DO UPDATE SET v = excluded.v`
	sqlKVDelete    = rtSQL + `DELETE FROM _cf_KV WHERE scope = ? AND k = ?`
	sqlKVDeleteAll = rtSQL + `DELETE FROM _cf_KV WHERE scope = ?`

	sqlAlarmGet = rtSQL + `SELECT at_ms, retry, counted_retry, generation FROM _cf_ALARM WHERE scope = ?`
	sqlAlarmSet = rtSQL + `INSERT INTO _cf_ALARM(scope, at_ms, retry, counted_retry, generation) VALUES(?, ?, 0, 0, ?)
ON CONFLICT(scope) DO UPDATE SET at_ms = excluded.at_ms, retry = 0, counted_retry = 0, generation = excluded.generation`
	sqlAlarmDelete      = rtSQL + `DELETE FROM _cf_ALARM WHERE scope = ?`
	sqlAlarmDeleteFired = rtSQL + `DELETE FROM _cf_ALARM WHERE scope = ? AND at_ms = ? AND generation = ?`
	sqlAlarmRetry       = rtSQL + `UPDATE _cf_ALARM SET at_ms = ?, retry = ?, counted_retry = ? WHERE scope = ? AND at_ms = ? AND generation = ?`
	sqlAlarmScan        = rtSQL + `SELECT at_ms, retry, counted_retry, generation FROM _cf_ALARM WHERE scope = ?`
	sqlHasAlarmTable    = rtSQL + `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '_cf_ALARM'`
)
