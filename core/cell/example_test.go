package cell_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
)

// Counter is a cell object: a method for typed calls, ServeHTTP for
// fetch-style requests, and Alarm for its alarm.
type Counter struct{ st *cell.State }

func NewCounter(ctx context.Context, st *cell.State) (*Counter, error) {
	_, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS counter(n INTEGER NOT NULL)")
	return &Counter{st: st}, err
}

// Increment is one atomic read-modify-write: it holds the gate from the
// read to the write.
func (c *Counter) Increment(ctx context.Context) (int64, error) {
	var n int64
	err := c.st.SQL().QueryRow(ctx, "SELECT n FROM counter").Scan(&n)
	if err != nil && err != cell.ErrNoRows {
		return 0, err
	}
	n++
	if _, err := c.st.SQL().Exec(ctx, "DELETE FROM counter"); err != nil {
		return 0, err
	}
	_, err = c.st.SQL().Exec(ctx, "INSERT INTO counter VALUES(?)", n)
	return n, err
}

func (c *Counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, err := c.Increment(r.Context()) // r.Context() belongs to the turn
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, n)
}

func (c *Counter) Alarm(ctx context.Context, info cell.AlarmInfo) error {
	_, err := c.Increment(ctx)
	return err
}

// The example needs a driver (drivers/wasm, drivers/cgo or
// drivers/modernc); it is compiled, not run.
func Example() {
	var drv driver.Driver // e.g. wasm.New()
	rt, err := cell.New(cell.Options{ScriptName: "my-app", Driver: drv, DataDir: "/var/lib/my-app"})
	if err != nil {
		panic(err)
	}
	defer rt.Close(context.Background())

	counters, err := cell.Register(rt, "Counter", NewCounter)
	if err != nil {
		panic(err)
	}
	stub := counters.Get(counters.IDFromName("visits"))

	// A typed call: the reply comes back once its commit is durable.
	n, err := cell.Call(context.Background(), stub, func(ctx context.Context, c *Counter) (int64, error) {
		return c.Increment(ctx)
	})
	fmt.Println(n, err)

	// An alarm in an hour.
	cell.Call(context.Background(), stub, func(ctx context.Context, c *Counter) (struct{}, error) {
		return struct{}{}, c.st.SetAlarm(ctx, time.Now().Add(time.Hour))
	})

	// The stub is an http.Handler too.
	http.Handle("/visits", stub)
}
