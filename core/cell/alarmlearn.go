package cell

import "context"

// LearnAlarms schedules the alarms stored in the local databases of the
// cells owns accepts (owns gets the cell key, "<Class>:<id>"), for every
// registered class, as registering a class does for all of its cells. A
// lease that hands groups of cells between processes on one host calls it
// when this process takes a group over (shard.Lease.Watch), so alarms
// another process stored are run here. Unreadable files are logged and
// skipped; it returns when ctx ends or every database was read.
func (rt *Runtime) LearnAlarms(ctx context.Context, owns func(cellKey string) bool) {
	rt.mu.Lock()
	classes := make([]*class, 0, len(rt.classes))
	for _, cls := range rt.classes {
		classes = append(classes, cls)
	}
	rt.mu.Unlock()
	for _, cls := range classes {
		if ctx.Err() != nil {
			return
		}
		rt.alarms.scanClass(ctx, cls, owns)
	}
}
