package onnx

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// vectorCache is a bounded LRU of vectors keyed by the sha256 of the exact model input, so
// that a passage embedded for the index or a query embedded for retrieval is not embedded
// again when the similarity reranker scores it moments later.
type vectorCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recent; values are *cacheEntry
	byKey map[[32]byte]*list.Element
	hits  int64
	total int64
}

type cacheEntry struct {
	key [32]byte
	vec []float32
}

func newVectorCache(max int) *vectorCache {
	if max <= 0 {
		return nil
	}
	return &vectorCache{max: max, order: list.New(), byKey: make(map[[32]byte]*list.Element)}
}

func cacheKey(text string) [32]byte { return sha256.Sum256([]byte(text)) }

// get returns a copy of the cached vector, if any. A nil cache never hits.
func (c *vectorCache) get(k [32]byte) ([]float32, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	el, ok := c.byKey[k]
	if !ok {
		return nil, false
	}
	c.hits++
	c.order.MoveToFront(el)
	return append([]float32(nil), el.Value.(*cacheEntry).vec...), true
}

func (c *vectorCache) put(k [32]byte, v []float32) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.byKey[k] = c.order.PushFront(&cacheEntry{key: k, vec: append([]float32(nil), v...)})
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byKey, old.Value.(*cacheEntry).key)
	}
}

func (c *vectorCache) stats() (hits, total int64) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.total
}
