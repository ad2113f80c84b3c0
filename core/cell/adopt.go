package cell

import (
	"context"
	"fmt"
)

// A cell's database holds rows of one scope, its own cell key. A fork
// (Runtime.Fork) copies another cell's database, whose rows carry the
// source's key: the destination adopts them in its first commit. Its
// storage (KV, facets) becomes its own; the source's alarm, wake identity
// and actor name are dropped, so a fork never inherits an alarm (nor the
// wake row that would announce it). SQL tables have no scope and come
// across as they are.
const (
	sqlForeignScope = rtSQL + `SELECT EXISTS(SELECT 1 FROM _cf_KV WHERE scope < ? OR scope > ?)
 OR EXISTS(SELECT 1 FROM _cf_FACETS WHERE scope < ? OR scope > ?)
 OR EXISTS(SELECT 1 FROM _cf_ALARM WHERE scope <> ?)
 OR EXISTS(SELECT 1 FROM _cf_WAKE WHERE scope <> ?)
 OR EXISTS(SELECT 1 FROM _cf_METADATA WHERE scope <> ?)`
)

var sqlAdoptScope = []string{
	rtSQL + `UPDATE OR REPLACE _cf_KV SET scope = ? WHERE scope <> ?`,
	rtSQL + `UPDATE OR REPLACE _cf_FACETS SET scope = ? WHERE scope <> ?`,
	rtSQL + `DELETE FROM _cf_ALARM WHERE scope <> ?`,
	rtSQL + `DELETE FROM _cf_WAKE WHERE scope <> ?`,
	rtSQL + `DELETE FROM _cf_METADATA WHERE scope <> ?`,
}

// adoptForeignLocked makes rows of another scope the cell's own, inside
// the open transaction (bookkeepLocked's, after schemaSQL). The check
// reads the primary-key indexes only, so a cell that was not forked pays
// a few index probes.
func (inst *instance) adoptForeignLocked(ctx context.Context) error {
	conn, key := inst.db.conn, inst.key
	n, err := queryInt(ctx, conn, sqlForeignScope, key, key, key, key, key, key, key)
	if err != nil || n == 0 {
		return err
	}
	for i, q := range sqlAdoptScope {
		args := []any{key}
		if i < 2 {
			args = append(args, key)
		}
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			return fmt.Errorf("adopt a forked database: %w", err)
		}
	}
	inst.rt.logger.Info("cell adopted a forked database: its storage is the cell's own, the source's alarm dropped", "cell", key)
	return nil
}
