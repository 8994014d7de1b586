package sim

import ()

// actHeap is a min-heap of activities by (ready, seq).
type actHeap []*activity

func (h actHeap) less(i, j int) bool {
	return h[i].ready < h[j].ready || h[i].ready == h[j].ready && h[i].seq < h[j].seq
}

func (h actHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}

func (h *actHeap) push(a *activity) {
	a.hidx = len(*h)
	*h = append(*h, a)
	h.up(a.hidx)
}

func (h actHeap) peek() *activity {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

func (h *actHeap) pop() *activity {
	a := (*h)[0]
	h.removeAt(0)
	return a
}

func (h *actHeap) remove(a *activity) {
	if a.hidx >= 0 && a.hidx < len(*h) && (*h)[a.hidx] == a {
		h.removeAt(a.hidx)
	}
}

// fix restores the heap's order after the activity at index i changed
// its ready time.
func (h actHeap) fix(i int) {
	h.down(i)
	h.up(i)
}

func (h *actHeap) removeAt(i int) {
	old := *h
	n := len(old) - 1
	a := old[i]
	if i != n {
		old.swap(i, n)
	}
	*h = old[:n]
	a.hidx = -1
	if i != n {
		h.down(i)
		h.up(i)
	}
}

func (h actHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h actHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
