package celltest

import (
	"context"
	"path/filepath"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
)

// Runtime.LearnAlarms schedules the alarms another runtime on the same
// data directory stored after this one started — those of the cells owns
// accepts, and no others — as a runtime that takes over a shard on one
// host does.
func caseAlarmLearn(c *checkT) {
	clk := clock.NewFake(epoch)
	dir := filepath.Join(c.dir, "learn")
	// rt starts first: its start-up scan finds no alarm.
	rt := c.runtime(rtConfig{clock: clk, dir: dir})
	_, runs := c.alarmClass(rt, "Learn", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	other := c.runtime(rtConfig{clock: clk, dir: dir})
	ns, _ := c.alarmClass(other, "Learn", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	for name, at := range map[string]time.Time{"taken": epoch.Add(time.Hour), "kept": epoch.Add(30 * time.Minute)} {
		if _, err := cell.Call(c.ctx, ns.Get(ns.IDFromName(name)), func(ctx context.Context, o *alarmObj) (int, error) {
			return 0, o.st.SetAlarm(ctx, at)
		}); err != nil {
			c.fatalf("SetAlarm on %s: %v", name, err)
		}
	}
	if err := other.Close(c.ctx); err != nil {
		c.fatalf("Close: %v", err)
	}
	c.expectNoTimer(clk, "before LearnAlarms (the alarms were stored after the runtime started)")
	taken := ns.Key(ns.IDFromName("taken"))
	rt.LearnAlarms(c.ctx, func(key string) bool { return key == taken })
	c.expectDeadline(clk, epoch.Add(time.Hour), "after LearnAlarms for one cell (the other cell's alarm, due sooner, is not this runtime's)")
	clk.Advance(time.Hour)
	if r := wait(c, runs, "the learned alarm"); r.err != nil || !r.info.ScheduledTime.Equal(epoch.Add(time.Hour)) {
		c.errorf("learned alarm: %+v", r)
	}
}
