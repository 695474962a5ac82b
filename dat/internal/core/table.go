package core

import (
	"sync"
	"sync/atomic"
)

// tableChunkLen is the number of entries of one chunk of an atomicTable.
const tableChunkLen = 256

type tableChunk[T any] [tableChunkLen]atomic.Pointer[T]

// atomicTable maps small, dense indexes (owner indexes of work request
// IDs, the STag index of an LMR context) to objects, for lookups on every
// DTO that take no lock: a directory of fixed chunks, replaced whole when
// it grows, whose entries are atomic pointers. Chunks are allocated as
// indexes reach them and never move, so an entry found through an old
// directory is the current entry.
//
// Growing is serialized here; what is stored in an entry, and when, is
// the owner's business (each user holds its own lock to write entries).
type atomicTable[T any] struct {
	growMu sync.Mutex
	dir    atomic.Pointer[[]*tableChunk[T]]
}

// at returns the entry of idx, or nil if the table never grew that far.
func (t *atomicTable[T]) at(idx uint64) *atomic.Pointer[T] {
	d := t.dir.Load()
	if d == nil {
		return nil
	}
	if c := idx / tableChunkLen; c < uint64(len(*d)) && (*d)[c] != nil {
		return &(*d)[c][idx%tableChunkLen]
	}
	return nil
}

// grow returns the entry of idx, adding chunks up to it.
func (t *atomicTable[T]) grow(idx uint64) *atomic.Pointer[T] {
	if e := t.at(idx); e != nil {
		return e
	}
	t.growMu.Lock()
	defer t.growMu.Unlock()
	var dir []*tableChunk[T]
	if d := t.dir.Load(); d != nil {
		dir = *d
	}
	c := int(idx / tableChunkLen)
	if c < len(dir) && dir[c] != nil {
		return &dir[c][idx%tableChunkLen] // grown by another caller meanwhile
	}
	grown := make([]*tableChunk[T], max(len(dir), c+1))
	copy(grown, dir)
	grown[c] = new(tableChunk[T])
	t.dir.Store(&grown)
	return &grown[c][idx%tableChunkLen]
}
