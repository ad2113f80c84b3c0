// Package bank is CellB's example of one request touching two cells:
// accounts, one cell each, and transfers between them made with typed
// method calls, wherever each account is owned.
//
//	POST /bank/<account>/deposit  {"id":"…","amount":N}
//	                              200 {"balance":N,"applied":bool}
//	POST /bank/transfer           {"id":"…","from":"…","to":"…","amount":N}
//	                              200 {"id":"…","applied":bool}
//	                              409 {"error":"insufficient funds",…}
//	GET  /bank/<account>          200 {"balance":N,"pending":N,"debits":N,"credits":N,"deposits":N,"node":"…"}
//
// A transfer is idempotent by its id: the debit records the id in the
// paying account (with the payee and the amount, as pending), the credit
// records it in the payee's, and each applies only the first time it sees
// an id, so a client that retries a transfer whose answer it lost moves
// the money once. "applied" says whether this attempt applied the debit.
// A debit the credit did not follow (the request was cut short, a node
// died) stays pending in the paying account, whose alarm sends the credit
// again until the payee has it: money is never lost in between, only late.
//
// The credit is a method call (cell.RegisterMethod) sent alone to the
// payee's owner, from the request or from the alarm, so the two accounts
// may live on any two nodes.
//
// Errors are answered as core/httperr maps them, with the message as the
// body.
package bank

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/httperr"
)

// Class is the class name the accounts register; it keys the cells.
const Class = "Account"

const (
	// MaxNameLen bounds account names.
	MaxNameLen = 256
	// MaxIDLen bounds transfer and deposit ids.
	MaxIDLen = 128
	// MaxAmount bounds one deposit or transfer.
	MaxAmount = 1 << 40
	// RedeliverAfter is how long after a debit the paying account's alarm
	// sends a credit that has not been confirmed.
	RedeliverAfter = 2 * time.Second
)

// ErrInsufficientFunds is the message of a debit refused for want of
// money (nothing is recorded: a retry may succeed later).
const ErrInsufficientFunds = "insufficient funds"

// The schema: every transfer and deposit an account took part in, by id
// and direction ("debit", "credit", "deposit"); pending marks a debit whose
// credit is not confirmed yet.
const createTable = `CREATE TABLE IF NOT EXISTS transfers(
	id TEXT NOT NULL,
	dir TEXT NOT NULL,
	peer TEXT NOT NULL,
	amount INTEGER NOT NULL,
	pending INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (id, dir))`

const balanceKey = "balance"

// Account is the account cell.
type Account struct {
	st  *cell.State
	app *App
}

// DebitArg, CreditArg and DepositArg are the methods' arguments.
type (
	DebitArg struct {
		ID     string `json:"id"`
		To     string `json:"to"`
		Amount int64  `json:"amount"`
	}
	CreditArg struct {
		ID     string `json:"id"`
		From   string `json:"from"`
		Amount int64  `json:"amount"`
	}
	DepositArg struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	}
)

// Result is what a debit, credit or deposit answers: whether this call
// applied it (false: it was applied before) and the balance after.
type Result struct {
	Applied bool  `json:"applied"`
	Balance int64 `json:"balance"`
}

// Summary is an account's state.
type Summary struct {
	Balance  int64 `json:"balance"`
	Pending  int64 `json:"pending"`
	Debits   int64 `json:"debits"`
	Credits  int64 `json:"credits"`
	Deposits int64 `json:"deposits"`
	// Node is the node that owns the account (and answered the summary).
	Node string `json:"node"`
}

func (a *Account) balance(ctx context.Context) (int64, error) {
	var v int64
	_, err := a.st.KV().GetInto(ctx, balanceKey, &v)
	return v, err
}

// seen reports whether the transfer id was recorded in direction dir.
func (a *Account) seen(ctx context.Context, id, dir string) (bool, error) {
	var n int64
	err := a.st.SQL().QueryRow(ctx, "SELECT count(*) FROM transfers WHERE id = ? AND dir = ?", id, dir).Scan(&n)
	return n > 0, err
}

// apply records id in direction dir and adds delta to the balance, in the
// turn's one transaction, unless id was recorded already.
func (a *Account) apply(ctx context.Context, id, dir, peer string, amount, delta int64, pending bool) (Result, error) {
	seen, err := a.seen(ctx, id, dir)
	if err != nil {
		return Result{}, err
	}
	bal, err := a.balance(ctx)
	if err != nil || seen {
		return Result{Balance: bal}, err
	}
	if bal+delta < 0 {
		return Result{Balance: bal}, errors.New(ErrInsufficientFunds)
	}
	p := 0
	if pending {
		p = 1
	}
	if _, err := a.st.SQL().Exec(ctx, "INSERT INTO transfers(id, dir, peer, amount, pending) VALUES (?, ?, ?, ?, ?)", id, dir, peer, amount, p); err != nil {
		return Result{}, err
	}
	bal += delta
	return Result{Applied: true, Balance: bal}, a.st.KV().Put(ctx, balanceKey, bal)
}

// Debit takes the amount out for transfer arg.ID and records it pending,
// with an alarm that redelivers the credit if it is not confirmed.
func (a *Account) Debit(ctx context.Context, arg DebitArg) (Result, error) {
	res, err := a.apply(ctx, arg.ID, "debit", arg.To, arg.Amount, -arg.Amount, true)
	if err != nil || !res.Applied {
		return res, err
	}
	if _, set, err := a.st.GetAlarm(ctx); err != nil || set {
		return res, err // an alarm already set sends every pending credit
	}
	return res, a.st.SetAlarm(ctx, time.Now().Add(RedeliverAfter))
}

// Credit adds the amount for transfer arg.ID, once.
func (a *Account) Credit(ctx context.Context, arg CreditArg) (Result, error) {
	return a.apply(ctx, arg.ID, "credit", arg.From, arg.Amount, arg.Amount, false)
}

// Deposit adds money from outside the bank, once per id.
func (a *Account) Deposit(ctx context.Context, arg DepositArg) (Result, error) {
	return a.apply(ctx, arg.ID, "deposit", "", arg.Amount, arg.Amount, false)
}

// Delivered marks the debit of transfer id confirmed.
func (a *Account) Delivered(ctx context.Context, id string) (bool, error) {
	_, err := a.st.SQL().Exec(ctx, "UPDATE transfers SET pending = 0 WHERE id = ? AND dir = 'debit'", id)
	return err == nil, err
}

// Summary reads the account.
func (a *Account) Summary(ctx context.Context) (Summary, error) {
	s := Summary{Node: a.app.node}
	var err error
	if s.Balance, err = a.balance(ctx); err != nil {
		return s, err
	}
	err = a.st.SQL().QueryRow(ctx, `SELECT
		coalesce(sum(pending), 0),
		coalesce(sum(dir = 'debit'), 0),
		coalesce(sum(dir = 'credit'), 0),
		coalesce(sum(dir = 'deposit'), 0) FROM transfers`).Scan(&s.Pending, &s.Debits, &s.Credits, &s.Deposits)
	return s, err
}

// Alarm sends again every credit not confirmed yet (the credit is
// idempotent), then marks them confirmed, and arms itself again if debits
// made meanwhile are pending. A failure retries the alarm.
func (a *Account) Alarm(ctx context.Context, _ cell.AlarmInfo) error {
	rows, err := a.st.SQL().Query(ctx, "SELECT id, peer, amount FROM transfers WHERE dir = 'debit' AND pending = 1 ORDER BY id")
	if err != nil {
		return err
	}
	var pending []CreditArg
	var to []string
	for rows.Next() {
		var c CreditArg
		var peer string
		if err := rows.Scan(&c.ID, &peer, &c.Amount); err != nil {
			rows.Close()
			return err
		}
		pending = append(pending, c)
		to = append(to, peer)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	from := a.st.ID().Name()
	if from == "" {
		from = a.st.ID().String()
	}
	for i, c := range pending {
		c.From = from
		// The call yields this turn; the object stays usable meanwhile.
		if _, err := a.app.credit.Call(ctx, a.app.account(to[i]), c); err != nil {
			return err
		}
		if _, err := a.Delivered(ctx, c.ID); err != nil {
			return err
		}
	}
	// A debit made while this alarm was out found it set and armed none:
	// arm it again for those.
	var left int64
	if err := a.st.SQL().QueryRow(ctx, "SELECT count(*) FROM transfers WHERE dir = 'debit' AND pending = 1").Scan(&left); err != nil || left == 0 {
		return err
	}
	return a.st.SetAlarm(ctx, time.Now().Add(RedeliverAfter))
}

// Options configure the app.
type Options struct {
	// Node names this node in X-Cellb-Node. Default "local".
	Node string
}

// App serves the bank over a runtime.
type App struct {
	// NS is the registered class.
	NS        *cell.Namespace[*Account]
	node      string
	debit     *cell.Method[*Account, DebitArg, Result]
	credit    *cell.Method[*Account, CreditArg, Result]
	deposit   *cell.Method[*Account, DepositArg, Result]
	delivered *cell.Method[*Account, string, bool]
	summary   *cell.Method[*Account, struct{}, Summary]
}

// Register registers the class and its methods on rt. Every node of a
// fleet registers them alike.
func Register(rt *cell.Runtime, o Options) (*App, error) {
	if o.Node == "" {
		o.Node = "local"
	}
	a := &App{node: o.Node}
	ns, err := cell.Register(rt, Class, func(ctx context.Context, st *cell.State) (*Account, error) {
		if _, err := st.SQL().Exec(ctx, createTable); err != nil {
			return nil, err
		}
		return &Account{st: st, app: a}, nil
	})
	if err != nil {
		return nil, err
	}
	a.NS = ns
	if a.debit, err = cell.RegisterMethod(ns, "debit", func(ctx context.Context, acc *Account, arg DebitArg) (Result, error) { return acc.Debit(ctx, arg) }); err != nil {
		return nil, err
	}
	if a.credit, err = cell.RegisterMethod(ns, "credit", func(ctx context.Context, acc *Account, arg CreditArg) (Result, error) { return acc.Credit(ctx, arg) }); err != nil {
		return nil, err
	}
	if a.deposit, err = cell.RegisterMethod(ns, "deposit", func(ctx context.Context, acc *Account, arg DepositArg) (Result, error) { return acc.Deposit(ctx, arg) }); err != nil {
		return nil, err
	}
	if a.delivered, err = cell.RegisterMethod(ns, "delivered", func(ctx context.Context, acc *Account, arg string) (bool, error) { return acc.Delivered(ctx, arg) }); err != nil {
		return nil, err
	}
	if a.summary, err = cell.RegisterMethod(ns, "summary", func(ctx context.Context, acc *Account, _ struct{}) (Summary, error) { return acc.Summary(ctx) }); err != nil {
		return nil, err
	}
	return a, nil
}

// account is the stub of the named account.
func (a *App) account(name string) *cell.Stub[*Account] { return a.NS.Get(a.NS.IDFromName(name)) }

// Transfer is a transfer as POST /bank/transfer takes it.
type Transfer struct {
	ID     string `json:"id"`
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int64  `json:"amount"`
}

// Transfer moves t.Amount from t.From to t.To, once per t.ID: the debit,
// then the credit, then the debit marked confirmed. applied is whether this
// call made the debit. An error after the debit leaves the transfer
// pending; the paying account's alarm finishes it, and so does a retry.
func (a *App) Transfer(ctx context.Context, t Transfer) (applied bool, err error) {
	d, err := a.debit.Call(ctx, a.account(t.From), DebitArg{ID: t.ID, To: t.To, Amount: t.Amount})
	if err != nil {
		return false, err
	}
	if _, err := a.credit.Call(ctx, a.account(t.To), CreditArg{ID: t.ID, From: t.From, Amount: t.Amount}); err != nil {
		return d.Applied, err
	}
	_, err = a.delivered.Call(ctx, a.account(t.From), t.ID)
	return d.Applied, err
}

// Deposit adds amount to the account, once per id.
func (a *App) Deposit(ctx context.Context, account, id string, amount int64) (Result, error) {
	return a.deposit.Call(ctx, a.account(account), DepositArg{ID: id, Amount: amount})
}

// Summary reads the account.
func (a *App) Summary(ctx context.Context, account string) (Summary, error) {
	return a.summary.Call(ctx, a.account(account), struct{}{})
}

// Routes adds the app's routes to mux.
func (a *App) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /bank/transfer", func(w http.ResponseWriter, r *http.Request) {
		var t Transfer
		if err := decode(r, &t); err != nil {
			httperr.Write(w, err)
			return
		}
		if err := checkName(t.From); err != nil {
			httperr.Write(w, err)
			return
		}
		if err := checkName(t.To); err != nil {
			httperr.Write(w, err)
			return
		}
		if t.From == t.To {
			httperr.Write(w, httperr.BadInput("from and to must be different accounts"))
			return
		}
		if err := checkIDAmount(t.ID, t.Amount); err != nil {
			httperr.Write(w, err)
			return
		}
		applied, err := a.Transfer(r.Context(), t)
		if refused(err) {
			a.answer(w, http.StatusConflict, map[string]any{"error": ErrInsufficientFunds, "id": t.ID})
			return
		}
		if err != nil {
			httperr.Write(w, err)
			return
		}
		a.answer(w, http.StatusOK, map[string]any{"id": t.ID, "applied": applied})
	})
	mux.HandleFunc("POST /bank/{account}/deposit", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("account")
		var d DepositArg
		if err := checkName(name); err != nil {
			httperr.Write(w, err)
			return
		}
		if err := decode(r, &d); err != nil {
			httperr.Write(w, err)
			return
		}
		if err := checkIDAmount(d.ID, d.Amount); err != nil {
			httperr.Write(w, err)
			return
		}
		res, err := a.Deposit(r.Context(), name, d.ID, d.Amount)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		a.answer(w, http.StatusOK, res)
	})
	mux.HandleFunc("GET /bank/{account}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("account")
		if err := checkName(name); err != nil {
			httperr.Write(w, err)
			return
		}
		s, err := a.Summary(r.Context(), name)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		a.answer(w, http.StatusOK, s)
	})
}

// refused reports whether err is a debit refused for want of funds.
func refused(err error) bool {
	var me *cell.MethodError
	return errors.As(err, &me) && me.Method == "debit" && me.Message == ErrInsufficientFunds
}

func (a *App) answer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("X-Cellb-Node", a.node)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// decode reads a JSON body of at most 4 KiB into v.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return httperr.BadInput("the body must be a JSON object of at most 4 KiB: %v", err)
	}
	return nil
}

func checkName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return httperr.BadInput("an account name is 1 to %d bytes", MaxNameLen)
	}
	return nil
}

func checkIDAmount(id string, amount int64) error {
	if id == "" || len(id) > MaxIDLen {
		return httperr.BadInput("an id is 1 to %d bytes", MaxIDLen)
	}
	if amount <= 0 || amount > MaxAmount {
		return httperr.BadInput("amount must be from 1 to %s", strconv.FormatInt(MaxAmount, 10))
	}
	return nil
}
