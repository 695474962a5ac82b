package lmr_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
)

// Register memory, name parts of it with triplets, and see the checks a
// DTO's triplets get: a segment must lie inside its LMR, and the LMR must
// grant the access the DTO needs.
func Example() {
	i, err := ia.Open("mem")
	if err != nil {
		log.Fatal(err)
	}
	defer i.Close(dat.CloseAbrupt)
	pz, _ := i.CreatePZ()

	// A buffer peers may read, and page-aligned memory outside the Go
	// heap that is only read locally.
	shared, err := lmr.Create(i, pz, make([]byte, 4096), dat.MemPrivLocalRead|dat.MemPrivLocalWrite|dat.MemPrivRemoteRead, dat.VATypeVA)
	if err != nil {
		log.Fatal(err)
	}
	defer shared.Free()
	ro, err := lmr.Alloc(i, pz, 1<<16, dat.MemPrivLocalRead)
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Free()
	p, _ := ro.Query()
	fmt.Println("allocated:", p.Length, "bytes, page aligned:", p.RegisteredAddress%4096 == 0)

	// What a peer needs to RDMA Read bytes 100..163: an RMR triplet, sent
	// as 16 bytes of private data or message payload.
	var wire [dat.RMRTripletSize]byte
	shared.RMRTriplet(100, 64).Encode(wire[:])
	t, _ := dat.DecodeRMRTriplet(wire[:])
	fmt.Println("peer reads", t.SegmentLength, "bytes at offset", uint64(t.VirtualAddress-shared.Addr()))

	// Posting checks every local triplet. The EP is not connected, so a
	// post that passes the checks is refused for its state instead.
	e, _ := evd.Create(i, 8, nil, dat.EVDDefault)
	defer e.Free()
	x, _ := ep.Create(i, pz, e, e, e, nil)
	defer x.Free()
	past := dat.LMRTriplet{LMRContext: shared.Context(), VirtualAddress: shared.Addr() + 4000, SegmentLength: 200}
	fmt.Println("past the end:", errors.Is(x.PostRecv([]dat.LMRTriplet{past}, 1, 0), dat.ErrInvalidParameter))
	fmt.Println("receive into read-only memory:", errors.Is(x.PostRecv([]dat.LMRTriplet{ro.Triplet(0, 64)}, 2, 0), dat.ErrPrivilegesViolation))
	// Output:
	// allocated: 65536 bytes, page aligned: true
	// peer reads 64 bytes at offset 100
	// past the end: true
	// receive into read-only memory: true
}
