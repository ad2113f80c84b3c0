package cell

// The runtime's own statements carry this marker so that a driver caching
// prepared statements by text never hands a statement the runtime prepared
// (with the authorizer off) to user code.
const rtSQL = "/*cellb*/ "

// schemaSQL creates celld's tables exactly as celld does, so a cell
// database moves between celld and CellB unchanged.
const schemaSQL = rtSQL + `CREATE TABLE IF NOT EXISTS _cf_KV(scope TEXT, k TEXT, v TEXT, PRIMARY KEY(scope,k));
CREATE TABLE IF NOT EXISTS _cf_ALARM(scope TEXT PRIMARY KEY, at_ms INTEGER, retry INTEGER DEFAULT 0, counted_retry INTEGER NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS _cf_METADATA(scope TEXT PRIMARY KEY, actor_name TEXT);`

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
