package verbs

// SRQAttr configures or describes a shared receive queue.
type SRQAttr struct {
	MaxWR  int // receives the SRQ can hold posted
	MaxSGE int // scatter elements per receive
	// Limit arms the limit event: when taking a receive leaves fewer than
	// Limit posted, the device reports EventSRQLimitReached once and the
	// limit disarms (becomes 0) until it is set again. 0 means disarmed.
	Limit int
}

// SRQAttrMask selects what SRQ.Modify changes.
type SRQAttrMask uint8

const (
	SRQMaxWR SRQAttrMask = 1 << iota // resize (never below the receives posted)
	SRQLimit                         // arm the limit event
)

// SRQ is a shared receive queue: receives posted to it are consumed in
// posting order by whichever of its QPs receives a message first.
type SRQ interface {
	PostRecv(wrs []RecvWR) (int, error)
	Modify(attr SRQAttr, mask SRQAttrMask) error
	Query() SRQAttr
	// Posted returns the number of receives posted and not yet consumed.
	Posted() int
	// Destroy fails with ErrInUse while QPs use the SRQ.
	Destroy() error
}
