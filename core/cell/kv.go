package cell

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/cellb/cellb/core/kvvalue"
)

// MaxKVKeyBytes is the longest key KV accepts (as Cloudflare's storage
// API does).
const MaxKVKeyBytes = 2048

// KV is a cell's key-value storage, kept in celld's _cf_KV table under the
// cell's key as scope, so celld reads what CellB writes and the other way
// round. Values are written as JSON text; values celld wrote in V8's
// serialization format are read too (see kvvalue.Value and
// docs/kv-values.md).
// Every call joins the turn's implicit transaction.
type KV struct {
	inst *instance
}

// KeyError reports a key KV does not accept.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string {
	k := e.Key
	if len(k) > 40 {
		k = k[:40] + "…"
	}
	return fmt.Sprintf("cell: KV key %q: %s", k, e.Reason)
}

func checkKVKey(k string) error {
	if len(k) > MaxKVKeyBytes {
		return &KeyError{Key: k, Reason: "longer than 2048 bytes"}
	}
	return nil
}

// Get reads one key; found is false when it is absent.
func (kv *KV) Get(ctx context.Context, key string) (v kvvalue.Value, found bool, err error) {
	if err := checkKVKey(key); err != nil {
		return kvvalue.Value{}, false, err
	}
	inst := kv.inst
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return kvvalue.Value{}, false, err
	}
	defer unlock()
	if inst.db.virgin {
		return kvvalue.Value{}, false, nil // nothing stored yet
	}
	rows, err := inst.db.conn.Query(ctx, sqlKVGet, inst.key, key)
	if err != nil {
		return kvvalue.Value{}, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return kvvalue.Value{}, false, rows.Err()
	}
	v, err = kvvalue.FromColumn(rows.Values()[0])
	if err != nil {
		return kvvalue.Value{}, false, fmt.Errorf("cell: KV key %q: %w", key, err)
	}
	return v, true, rows.Err()
}

// GetInto reads one key and decodes it into dest (as kvvalue.Value.Decode
// does).
func (kv *KV) GetInto(ctx context.Context, key string, dest any) (found bool, err error) {
	v, found, err := kv.Get(ctx, key)
	if err != nil || !found {
		return found, err
	}
	return true, v.Decode(dest)
}

// GetMany reads several keys; absent keys are missing from the map.
func (kv *KV) GetMany(ctx context.Context, keys []string) (map[string]kvvalue.Value, error) {
	out := make(map[string]kvvalue.Value, len(keys))
	for _, k := range keys {
		v, found, err := kv.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		if found {
			out[k] = v
		}
	}
	return out, nil
}

// Put stores value under key. value is encoded as JSON, except a
// kvvalue.Value, which is stored exactly as read (so copying a V8-encoded value keeps its
// bytes).
func (kv *KV) Put(ctx context.Context, key string, value any) error {
	if err := checkKVKey(key); err != nil {
		return err
	}
	col, err := kvvalue.ToColumn(value)
	if err != nil {
		return fmt.Errorf("cell: KV key %q: %w", key, err)
	}
	inst := kv.inst
	if err := inst.rt.limits().checkKV(key, col); err != nil {
		return err
	}
	unlock, err := inst.lockWrite(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	inTx := inst.db.conn.InTransaction()
	_, err = inst.db.conn.Exec(ctx, sqlKVPut, inst.key, key, col)
	return inst.writeFailed(inTx, err)
}

// PutMany stores several entries in one go (in key order).
func (kv *KV) PutMany(ctx context.Context, entries map[string]any) error {
	keys := make([]string, 0, len(entries))
	for k := range entries {
		if err := checkKVKey(k); err != nil {
			return err
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := kv.Put(ctx, k, entries[k]); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes key and reports whether it existed.
func (kv *KV) Delete(ctx context.Context, key string) (bool, error) {
	if err := checkKVKey(key); err != nil {
		return false, err
	}
	inst := kv.inst
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	if inst.db.virgin {
		return false, nil
	}
	res, err := inst.db.conn.Exec(ctx, sqlKVDelete, inst.key, key)
	return res.RowsAffected > 0, err
}

// DeleteMany removes several keys and returns how many existed.
func (kv *KV) DeleteMany(ctx context.Context, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		ok, err := kv.Delete(ctx, k)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// DeleteAll removes every key of the cell, and only them: SQL tables and
// the alarm stay. State.DeleteAll deletes everything (Durable Objects'
// storage.deleteAll()).
func (kv *KV) DeleteAll(ctx context.Context) error {
	inst := kv.inst
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if inst.db.virgin {
		return nil
	}
	_, err = inst.db.conn.Exec(ctx, sqlKVDeleteAll, inst.key)
	return err
}

// ListOptions select a range of keys. Keys compare as bytes (UTF-8 order).
type ListOptions struct {
	// Start is the first key included ("" means from the beginning).
	Start string
	// StartAfter excludes keys up to and including it (combined with
	// Start, the later bound wins).
	StartAfter string
	// End excludes it and every later key ("" means to the end).
	End string
	// Prefix keeps only keys that start with it.
	Prefix string
	// Reverse lists from the last key down.
	Reverse bool
	// Limit caps the number of entries (0 means no limit).
	Limit int
}

// Entry is one listed key and its value.
type Entry struct {
	Key   string
	Value kvvalue.Value
}

// List returns the entries selected by opts, in key order (descending if
// opts.Reverse).
func (kv *KV) List(ctx context.Context, opts ListOptions) ([]Entry, error) {
	if opts.Limit < 0 {
		return nil, fmt.Errorf("cell: KV list: negative limit %d", opts.Limit)
	}
	q, args := listQuery(kv.inst.key, opts)
	inst := kv.inst
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if inst.db.virgin {
		return nil, nil
	}
	rows, err := inst.db.conn.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		vals := rows.Values()
		k, ok := vals[0].(string)
		if !ok {
			if b, isBytes := vals[0].([]byte); isBytes {
				k = string(b)
			} else {
				return nil, fmt.Errorf("cell: KV list: key column is %T", vals[0])
			}
		}
		if opts.Prefix != "" && !strings.HasPrefix(k, opts.Prefix) {
			continue
		}
		v, err := kvvalue.FromColumn(vals[1])
		if err != nil {
			return nil, fmt.Errorf("cell: KV key %q: %w", k, err)
		}
		out = append(out, Entry{Key: k, Value: v})
	}
	return out, rows.Err()
}

// listQuery builds the SELECT for List. The prefix becomes a key range so
// the primary key index serves it.
func listQuery(scope string, o ListOptions) (string, []any) {
	q := rtSQL + "SELECT k, v FROM _cf_KV WHERE scope = ?"
	args := []any{scope}
	if o.Start != "" {
		q += " AND k >= ?"
		args = append(args, o.Start)
	}
	if o.StartAfter != "" {
		q += " AND k > ?"
		args = append(args, o.StartAfter)
	}
	if o.End != "" {
		q += " AND k < ?"
		args = append(args, o.End)
	}
	if o.Prefix != "" {
		q += " AND k >= ?"
		args = append(args, o.Prefix)
		if upper, ok := prefixUpperBound(o.Prefix); ok {
			q += " AND k < ?"
			args = append(args, upper)
		}
	}
	if o.Reverse {
		q += " ORDER BY k DESC"
	} else {
		q += " ORDER BY k ASC"
	}
	if o.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", o.Limit)
	}
	return q, args
}

// prefixUpperBound is the smallest string greater than every string with
// the prefix, byte-wise; ok is false when there is none (all 0xff).
func prefixUpperBound(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
