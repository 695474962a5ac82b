package srq_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/dat/srq"
)

// wait returns the next event of e.
func wait(e *evd.EVD) dat.Event {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, _, err := e.Wait(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	return ev
}

// A server receives from two clients into one shared receive queue: the
// buffers are posted once, to the SRQ, and each message takes the oldest
// one whichever connection it arrives on.
func Example() {
	srv, err := ia.Open("mem")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close(dat.CloseAbrupt)
	pz, _ := srv.CreatePZ()
	sevd, _ := evd.Create(srv, 32, nil, dat.EVDDefault)
	buf, _ := lmr.Create(srv, pz, make([]byte, 4*64), dat.MemPrivLocalWrite, dat.VATypeVA)
	q, err := srq.Create(srv, pz, srq.Attr{MaxRecvDTOs: 4})
	if err != nil {
		log.Fatal(err)
	}
	for k := 0; k < 4; k++ {
		if err := q.PostRecv([]dat.LMRTriplet{buf.Triplet(64*k, 64)}, dat.DTOCookie(100+k)); err != nil {
			log.Fatal(err)
		}
	}
	psp, _, err := ep.CreatePSPAny(srv, sevd, dat.PSPConsumer)
	if err != nil {
		log.Fatal(err)
	}
	defer psp.Free()
	p, _ := psp.Query()

	// Two clients connect; the server accepts each on an EP of the SRQ.
	cli, _ := ia.Open("mem")
	defer cli.Close(dat.CloseAbrupt)
	cpz, _ := cli.CreatePZ()
	cevd, _ := evd.Create(cli, 32, nil, dat.EVDDefault)
	msg, _ := lmr.Create(cli, cpz, []byte("from A, from B"), dat.MemPrivLocalRead, dat.VATypeVA)
	var clients []*ep.EP
	for range 2 {
		c, _ := ep.Create(cli, cpz, cevd, cevd, cevd, nil)
		if err := c.Connect(srv.Addr(), p.ConnQual, 10*time.Second, nil, dat.QoSBestEffort, dat.ConnectDefault); err != nil {
			log.Fatal(err)
		}
		cr := wait(sevd).CR.CR.(*ep.CR)
		s, err := ep.CreateWithSRQ(srv, pz, sevd, sevd, sevd, q, &dat.EPAttr{})
		if err != nil {
			log.Fatal(err)
		}
		if err := cr.Accept(s, nil); err != nil {
			log.Fatal(err)
		}
		wait(sevd) // ESTABLISHED
		wait(cevd) // ESTABLISHED
		clients = append(clients, c)
	}

	// B sends first, then A: the first buffer posted goes to B.
	clients[1].PostSend([]dat.LMRTriplet{msg.Triplet(8, 6)}, 2, dat.CompletionSuppress)
	clients[0].PostSend([]dat.LMRTriplet{msg.Triplet(0, 6)}, 1, dat.CompletionSuppress)
	for range 2 {
		d := wait(sevd).DTO
		k := int(d.Cookie - 100)
		fmt.Printf("buffer %d: %q\n", k, buf.Bytes()[64*k:64*k+int(d.Length)])
	}
	qp, _ := q.Query()
	fmt.Println("still posted:", qp.Available, "of", qp.MaxRecvDTOs)
	// Output:
	// buffer 0: "from B"
	// buffer 1: "from A"
	// still posted: 2 of 4
}
