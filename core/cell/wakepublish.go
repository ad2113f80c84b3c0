package cell

import (
	"context"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/wakeport"
)

// publishedDurable reports a publication's failure as a
// *wakeport.PublishError, so the reset names the publication rather than a
// commit.
type publishedDurable struct {
	durability.Durable
	p wakeport.Publication
}

func (d publishedDurable) Err() error {
	if err := d.Durable.Err(); err != nil {
		return &wakeport.PublishError{Publication: d.p, Err: err}
	}
	return nil
}

// publishWakeLocked hands the alarm change a commit just made to the
// publisher (wakeState.publication decides what it is): a sequence that
// did not move means the turn changed no alarm (a settle that found the
// alarm re-armed, a turn that only read it) and nothing is published. The caller holds inst.mu and
// has checked that Options.Wake is set.
func (inst *instance) publishWakeLocked(ctx context.Context) error {
	w, err := inst.readWakeLocked(ctx)
	if err != nil {
		return err
	}
	p, after, ok := inst.wake.publication(inst.key, w)
	if !ok {
		return nil
	}
	d := inst.rt.opts.Wake.Publish(p, after)
	if d == nil {
		return nil
	}
	inst.commits.track(publishedDurable{d, p})
	return nil
}
