package ep_test

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
)

// next waits for the next event on e and checks its number.
func next(e *evd.EVD, want dat.EventNumber) dat.Event {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, _, err := e.Wait(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	if ev.Number != want || (ev.Number == dat.DTOCompletionEvent && ev.DTO.Status != dat.DTOSuccess) {
		log.Fatalf("got %v (%v), want %v", ev.Number, ev.DTO.Status, want)
	}
	return ev
}

// A server and a client in one process, over the in-memory provider: the
// server advertises a buffer in its accept private data, the client RDMA
// Writes into it and then Sends a message, whose arrival tells the server
// the write has landed.
func Example() {
	// Server: IA, PZ, one EVD for every stream, a buffer peers may write,
	// a PSP on connection qualifier 4791.
	srv, err := ia.Open("mem")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close(dat.CloseAbrupt)
	spz, _ := srv.CreatePZ()
	sevd, _ := evd.Create(srv, 16, nil, dat.EVDDefault)
	sbuf, _ := lmr.Create(srv, spz, make([]byte, 64), dat.MemPrivLocalWrite|dat.MemPrivRemoteWrite, dat.VATypeVA)
	psp, err := ep.CreatePSP(srv, 4791, sevd, dat.PSPConsumer)
	if err != nil {
		log.Fatal(err)
	}
	defer psp.Free()

	// Client: the same objects, and an EP connecting to the server.
	cli, _ := ia.Open("mem")
	defer cli.Close(dat.CloseAbrupt)
	cpz, _ := cli.CreatePZ()
	cevd, _ := evd.Create(cli, 16, nil, dat.EVDDefault)
	cbuf, _ := lmr.Create(cli, cpz, make([]byte, 64), dat.MemPrivLocalRead, dat.VATypeVA)
	cep, _ := ep.Create(cli, cpz, cevd, cevd, cevd, nil)
	if err := cep.Connect(srv.Addr(), 4791, 10*time.Second, []byte("hello server"), dat.QoSBestEffort, dat.ConnectDefault); err != nil {
		log.Fatal(err)
	}

	// Server: take the request, pre-post a receive, accept with the
	// buffer's RMR triplet as private data.
	cr := next(sevd, dat.ConnectionRequestEvent).CR.CR.(*ep.CR)
	crp, _ := cr.Query()
	fmt.Printf("server: request %q\n", crp.PrivateData)
	sep, _ := ep.Create(srv, spz, sevd, sevd, sevd, nil)
	if err := sep.PostRecv([]dat.LMRTriplet{sbuf.Triplet(32, 32)}, 1, dat.CompletionDefault); err != nil {
		log.Fatal(err)
	}
	var pd [dat.RMRTripletSize]byte
	sbuf.RMRTriplet(0, 32).Encode(pd[:])
	if err := cr.Accept(sep, pd[:]); err != nil {
		log.Fatal(err)
	}
	next(sevd, dat.ConnectionEventEstablished)

	// Client: learn the buffer, RDMA Write into it, then Send.
	est := next(cevd, dat.ConnectionEventEstablished)
	remote, err := dat.DecodeRMRTriplet(est.Conn.PrivateData)
	if err != nil {
		log.Fatal(err)
	}
	n := copy(cbuf.Bytes(), "written by RDMA")
	if err := cep.PostRDMAWrite([]dat.LMRTriplet{cbuf.Triplet(0, n)}, 10, remote, dat.CompletionDefault); err != nil {
		log.Fatal(err)
	}
	m := copy(cbuf.Bytes()[32:], "sent")
	if err := cep.PostSend([]dat.LMRTriplet{cbuf.Triplet(32, m)}, 11, dat.CompletionDefault); err != nil {
		log.Fatal(err)
	}
	fmt.Println("client: write cookie", next(cevd, dat.DTOCompletionEvent).DTO.Cookie)
	fmt.Println("client: send cookie", next(cevd, dat.DTOCompletionEvent).DTO.Cookie)

	// Server: the receive completes after the write was placed.
	rcv := next(sevd, dat.DTOCompletionEvent).DTO
	b := sbuf.Bytes()
	fmt.Printf("server: received %q, buffer holds %q\n", b[32:32+rcv.Length], b[:n])

	// Teardown: the client disconnects, both sides see DISCONNECTED.
	cep.Disconnect(dat.CloseGraceful)
	next(cevd, dat.ConnectionEventDisconnected)
	next(sevd, dat.ConnectionEventDisconnected)
	fmt.Println("server EP:", sep.State())
	// Output:
	// server: request "hello server"
	// client: write cookie 10
	// client: send cookie 11
	// server: received "sent", buffer holds "written by RDMA"
	// server EP: DAT_EP_STATE_DISCONNECTED
}
