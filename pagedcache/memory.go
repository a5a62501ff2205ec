package pagedcache

// pool is the KV memory: token slots grouped in pages, the free list, the
// prefix cache and the LRU list of unreferenced cached pages. It is not safe
// for concurrent use; Server.mu guards it.
type pool struct {
	pageSize int
	numPages int // usable pages are 1..numPages; page 0 is reserved

	// Per slot (page*pageSize + offset): the token ID and who wrote it last
	// (request sequence number and interned tenant; 0 = never written). A
	// generated token's tenant carries generatedBit, so that the boundary
	// between a request's prompt and its answer stays visible in its pages.
	tokens       []uint32
	writerReq    []uint32
	writerTenant []uint32

	pages []pageMeta
	free  deque
	reuse Reuse

	// Unreferenced cached pages, least recently used at the head.
	lruHead, lruTail int32
	evictable        int

	cache map[uint64]int32 // chained prefix hash -> page
	gen   uint64           // last write generation handed out

	// Late writes of aborted requests (FaultAbortReuseRace), by page: they
	// land when the page's next owner has written it.
	pending map[int32][]lateWrite

	evictions uint64
}

// generatedBit marks, in writerTenant, a token the model generated.
const generatedBit uint32 = 1 << 31

type pageMeta struct {
	ownerReq    uint32
	ownerTenant uint32
	gen         uint64
	ref         int32
	cached      bool
	hash        uint64
	prev, next  int32 // LRU links while unreferenced and cached; -1 = none
}

type lateWrite struct {
	off    int
	toks   []uint32
	req    uint32
	tenant uint32
}

func newPool(capacity, pageSize int, reuse Reuse) *pool {
	n := capacity / pageSize
	p := &pool{
		pageSize:     pageSize,
		numPages:     n,
		tokens:       make([]uint32, (n+1)*pageSize),
		writerReq:    make([]uint32, (n+1)*pageSize),
		writerTenant: make([]uint32, (n+1)*pageSize),
		pages:        make([]pageMeta, n+1),
		free:         newDeque(n),
		reuse:        reuse,
		lruHead:      -1,
		lruTail:      -1,
		cache:        make(map[uint64]int32),
		pending:      make(map[int32][]lateWrite),
	}
	// At start-up the free list hands out pages 1, 2, 3, ... in order.
	if reuse == ReuseLIFO {
		for pg := n; pg >= 1; pg-- {
			p.free.pushBack(int32(pg))
		}
	} else {
		for pg := 1; pg <= n; pg++ {
			p.free.pushBack(int32(pg))
		}
	}
	for i := range p.pages {
		p.pages[i].prev, p.pages[i].next = -1, -1
	}
	return p
}

// available is the number of pages a request could take now.
func (p *pool) available() int { return p.free.n + p.evictable }

// used is the number of pages referenced by running requests.
func (p *pool) used() int { return p.numPages - p.free.n - p.evictable }

// take hands out one page for writing by (tenant, req): from the free list
// in reuse order, else by evicting the least recently used cached page. The
// page is not scrubbed. The caller must have checked available() > 0.
func (p *pool) take(tenant, req uint32) int32 {
	var pg int32
	if p.free.n > 0 {
		if p.reuse == ReuseLIFO {
			pg = p.free.popBack()
		} else {
			pg = p.free.popFront()
		}
	} else {
		pg = p.lruHead
		p.unlink(pg)
		m := &p.pages[pg]
		delete(p.cache, m.hash)
		m.cached, m.hash = false, 0
		p.evictions++
	}
	m := &p.pages[pg]
	p.gen++
	m.ownerReq, m.ownerTenant, m.gen, m.ref = req, tenant, p.gen, 1
	return pg
}

// release drops one reference to pg; an unreferenced page goes to the LRU
// list if cached, else back to the free list.
func (p *pool) release(pg int32) {
	m := &p.pages[pg]
	m.ref--
	if m.ref > 0 {
		return
	}
	if m.cached {
		m.prev, m.next = p.lruTail, -1
		if p.lruTail >= 0 {
			p.pages[p.lruTail].next = pg
		} else {
			p.lruHead = pg
		}
		p.lruTail = pg
		p.evictable++
		return
	}
	p.free.pushBack(pg)
}

func (p *pool) unlink(pg int32) {
	m := &p.pages[pg]
	if m.prev >= 0 {
		p.pages[m.prev].next = m.next
	} else {
		p.lruHead = m.next
	}
	if m.next >= 0 {
		p.pages[m.next].prev = m.prev
	} else {
		p.lruTail = m.prev
	}
	m.prev, m.next = -1, -1
	p.evictable--
}

// lookup returns the cached page for hash if it holds exactly toks, and
// takes a reference on it.
func (p *pool) lookup(hash uint64, toks []uint32) (int32, bool) {
	pg, ok := p.cache[hash]
	if !ok {
		return 0, false
	}
	base := int(pg) * p.pageSize
	for i, t := range toks {
		if p.tokens[base+i] != t {
			return 0, false
		}
	}
	m := &p.pages[pg]
	if m.ref == 0 {
		p.unlink(pg)
	}
	m.ref++
	return pg, true
}

// insert registers a full page under hash unless another page already is.
func (p *pool) insert(hash uint64, pg int32) {
	if _, ok := p.cache[hash]; ok {
		return
	}
	p.cache[hash] = pg
	p.pages[pg].cached, p.pages[pg].hash = true, hash
}

// write stores toks at offset off of page pg as written by (tenant, req).
func (p *pool) write(pg int32, off int, toks []uint32, tenant, req uint32) {
	base := int(pg)*p.pageSize + off
	copy(p.tokens[base:base+len(toks)], toks)
	for i := range toks {
		p.writerReq[base+i] = req
		p.writerTenant[base+i] = tenant
	}
}

// landLateWrites applies pending late writes aimed at pg; it returns how
// many token slots they overwrote.
func (p *pool) landLateWrites(pg int32) int {
	ws, ok := p.pending[pg]
	if !ok {
		return 0
	}
	delete(p.pending, pg)
	n := 0
	for _, w := range ws {
		p.write(pg, w.off, w.toks, w.tenant, w.req)
		n += len(w.toks)
	}
	return n
}

// deque is a ring buffer of page numbers.
type deque struct {
	buf  []int32
	head int
	n    int
}

func newDeque(capacity int) deque { return deque{buf: make([]int32, max(capacity, 1))} }

func (d *deque) pushBack(v int32) {
	d.buf[(d.head+d.n)%len(d.buf)] = v
	d.n++
}

func (d *deque) popBack() int32 {
	d.n--
	return d.buf[(d.head+d.n)%len(d.buf)]
}

func (d *deque) popFront() int32 {
	v := d.buf[d.head]
	d.head = (d.head + 1) % len(d.buf)
	d.n--
	return v
}
