package spec

import (
	"slices"
	"sync"
)

// An exploration on several cores. The tree of schedules is far from
// even (most of it lies under the path that injects no fault early), so
// it is not cut in advance: every worker explores a piece, the schedules
// whose choices begin with the piece's root, and a worker that sees
// another idle with nothing queued gives away the alternatives left at
// the shallowest choice of its current path, each a piece of its own,
// and stops short of them. A piece's schedules all come, in depth-first
// order, before those of the pieces it gave away and after its root's
// predecessors, so ordering the pieces by root (a prefix before its
// extensions) orders their schedules as one worker would have run them.

// shared is the work the workers share.
type shared struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   [][]int // roots of pieces not yet taken
	idle    int
	workers int
	done    bool
	stop    bool // a worker met an error (abort)
}

// hungry reports whether a worker waits with nothing to take.
func (s *shared) hungry() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idle > 0 && len(s.queue) == 0
}

func (s *shared) give(roots [][]int) {
	s.mu.Lock()
	s.queue = append(s.queue, roots...)
	s.mu.Unlock()
	s.cond.Broadcast()
}

// abort ends the exploration: a worker met an error.
func (s *shared) abort() {
	s.mu.Lock()
	s.done, s.stop, s.queue = true, true, nil
	s.mu.Unlock()
	s.cond.Broadcast()
}

// aborted reports whether a worker met an error.
func (s *shared) aborted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stop
}

// take returns a piece's root, or false once every worker is idle and
// nothing is queued (the tree is done), or the exploration was aborted.
func (s *shared) take() ([]int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle++
	for len(s.queue) == 0 && !s.done {
		if s.idle == s.workers {
			s.done = true
			s.cond.Broadcast()
			break
		}
		s.cond.Wait()
	}
	if len(s.queue) == 0 {
		return nil, false
	}
	s.idle--
	r := s.queue[0]
	s.queue = s.queue[1:]
	return r, true
}

// piece is one worker's share: its root and what it found under it.
type piece struct {
	root []int
	res  ExploreResult
}

// exploreShared explores the whole tree on workers goroutines and
// merges the pieces in depth-first order.
func exploreShared(o ExploreOptions, workers int, progress func(schedules, violations int)) (ExploreResult, error) {
	sh := &shared{queue: [][]int{nil}, workers: workers}
	sh.cond = sync.NewCond(&sh.mu)
	var mu sync.Mutex // guards pieces, firstErr and the progress counts
	var pieces []piece
	var firstErr error
	done, props := 0, map[string]bool{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				root, ok := sh.take()
				if !ok {
					return
				}
				res, err := exploreSubtree(o, root, 0, func(int, int) {
					if progress != nil {
						mu.Lock()
						done++
						progress(done, len(props))
						mu.Unlock()
					}
				}, sh)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					sh.abort() // the others stop at their next schedule
				}
				pieces = append(pieces, piece{root, res})
				for _, v := range res.Violations {
					props[v.Property] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return ExploreResult{}, firstErr
	}
	slices.SortFunc(pieces, func(a, b piece) int { return slices.Compare(a.root, b.root) })
	res := ExploreResult{Complete: true}
	best := map[string]int{}
	for _, p := range pieces {
		res.Schedules += p.res.Schedules
		res.Complete = res.Complete && p.res.Complete
		for _, v := range p.res.Violations {
			k, seen := best[v.Property]
			switch {
			case !seen:
				best[v.Property] = len(res.Violations)
				res.Violations = append(res.Violations, v)
			case v.Steps < res.Violations[k].Steps:
				res.Violations[k] = v // (traces left to the collector: two properties' may share one)
			}
		}
	}
	return res, nil
}
