package fs

import "sync"

// dirSyncs lets concurrent writers in one directory share its fsyncs.
//
// A directory fsync makes durable every entry changed in the directory
// before it began, whoever changed it. So a caller that has renamed or
// unlinked a name needs one fsync of the directory that started after its
// change, not one of its own: a caller that arrives while none is running
// starts one; a caller that arrives while one is running waits for it to
// end and then for the next, which it starts or joins, with every other
// caller that arrived meanwhile. However many callers, a directory has at
// most one fsync running and one gathering. Sound by construction: a
// caller joins a round only while the round has not begun, after its own
// change, so the round's fsync covers it.
type dirSyncs struct {
	mu   sync.Mutex
	dirs map[string]*dirSync
}

// dirSync is the state of one directory, kept while callers use it.
type dirSync struct {
	users   int        // callers between entry and exit, guarded by dirSyncs.mu
	mu      sync.Mutex // guards running and next
	running *syncRound // the fsync in progress, if any
	next    *syncRound // the round that starts when running ends, if any
}

// syncRound is one fsync shared by every caller that joined it.
type syncRound struct {
	done chan struct{} // closed when the fsync has returned
	err  error         // its result, set before done is closed
}

// do returns once an fsync of dir that began after do was called has
// returned, with its error. fsync is run when this caller leads a round;
// each caller's fsync must sync the same directory.
func (g *dirSyncs) do(dir string, fsync func() error) error {
	d := g.enter(dir)
	defer g.exit(dir, d)

	d.mu.Lock()
	if r := d.next; r != nil {
		// A round is gathering and has not begun: join it.
		d.mu.Unlock()
		<-r.done
		return r.err
	}
	r := &syncRound{done: make(chan struct{})}
	if prev := d.running; prev != nil {
		// One is running, perhaps from before our change: gather the next
		// round, and lead it once the running one ends.
		d.next = r
		d.mu.Unlock()
		<-prev.done
		d.mu.Lock()
		d.running, d.next = r, nil
	} else {
		d.running = r
	}
	d.mu.Unlock()

	r.err = fsync()

	d.mu.Lock()
	if d.running == r {
		d.running = nil
	}
	d.mu.Unlock()
	close(r.done)
	return r.err
}

func (g *dirSyncs) enter(dir string) *dirSync {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dirs == nil {
		g.dirs = make(map[string]*dirSync)
	}
	d := g.dirs[dir]
	if d == nil {
		d = &dirSync{}
		g.dirs[dir] = d
	}
	d.users++
	return d
}

// exit forgets dir once its last caller is done, so the map holds only
// directories being synced.
func (g *dirSyncs) exit(dir string, d *dirSync) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if d.users--; d.users == 0 {
		delete(g.dirs, dir)
	}
}
