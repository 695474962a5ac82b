package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
)

// maxRegion bounds the memory one connection may ask a server for.
const maxRegion = 256 << 20

// server answers dattest clients on one PSP: each accepted connection
// gets a session that exposes an RDMA region and echoes every message it
// receives. The server does not need to know the test a client runs.
type server struct {
	ia  *ia.IA
	pz  *ia.PZ
	log zerolog.Logger
	wg  sync.WaitGroup // sessions
}

// serve listens on qual (0: any free qualifier), calls ready with the
// qualifier once clients may connect, and serves until ctx ends. It
// returns nil when stopped by ctx.
func serve(ctx context.Context, i *ia.IA, qual dat.ConnQual, log zerolog.Logger, ready func(dat.ConnQual)) error {
	pz, err := i.CreatePZ()
	if err != nil {
		return err
	}
	defer pz.Free()
	crEVD, err := evd.Create(i, 64, nil, dat.EVDCR)
	if err != nil {
		return err
	}
	defer crEVD.Free()
	var psp *ep.PSP
	if qual == 0 {
		psp, qual, err = ep.CreatePSPAny(i, crEVD, dat.PSPConsumer)
	} else {
		psp, err = ep.CreatePSP(i, qual, crEVD, dat.PSPConsumer)
	}
	if err != nil {
		return fmt.Errorf("listening on port %d: %w", qual, err)
	}
	defer psp.Free()
	s := &server{ia: i, pz: pz, log: log}
	defer s.wg.Wait() // before the PZ and EVDs go
	ready(qual)
	for {
		ev, _, err := crEVD.Wait(ctx, 1)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if ev.Number != dat.ConnectionRequestEvent {
			s.log.Warn().Stringer("event", ev.Number).Msg("unexpected event on the CR EVD")
			continue
		}
		if s.request(ctx, ev.CR.CR.(*ep.CR)) {
			s.log.Info().Msg("quit requested")
			return nil
		}
	}
}

// request answers one connection request: a session, or a reject. It
// reports whether the request asked the server to quit (dapltest -T Q).
func (s *server) request(ctx context.Context, cr *ep.CR) (quit bool) {
	p, err := cr.Query()
	if err != nil {
		s.log.Warn().Err(err).Msg("cr_query")
		cr.Reject(nil)
		return false
	}
	if isQuit(p.PrivateData) {
		cr.Reject([]byte(quitReply))
		return true
	}
	su, err := parseSetup(p.PrivateData)
	if err == nil && su.Size*su.Depth > maxRegion {
		err = fmt.Errorf("%d x %d bytes exceed the server's %d per connection", su.Depth, su.Size, maxRegion)
	}
	if err != nil {
		s.log.Info().Stringer("peer", p.RemoteAddr).Err(err).Msg("rejecting")
		reason := []byte(err.Error())
		cr.Reject(reason[:min(len(reason), 48)])
		return false
	}
	ss, err := s.newSession(su)
	if err != nil {
		s.log.Warn().Err(err).Msg("creating a session")
		cr.Reject([]byte("server out of resources"))
		return false
	}
	if err := ss.start(); err != nil {
		s.log.Warn().Err(err).Msg("posting receives")
		cr.Reject([]byte("server out of resources"))
		ss.free()
		return false
	}
	var pd [dat.RMRTripletSize]byte
	ss.buf.RMRTriplet(0, su.Depth*su.Size).Encode(pd[:])
	if err := cr.Accept(ss.ep, pd[:]); err != nil {
		s.log.Warn().Err(err).Msg("cr_accept")
		ss.free()
		return false
	}
	s.log.Debug().Stringer("peer", p.RemoteAddr).Int("size", su.Size).Int("depth", su.Depth).Msg("accepted")
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ss.routineEcho(ctx)
	}()
	return false
}

// session is the server end of one connection. Its buffer is the RDMA
// region (depth slots) followed by 2*depth message slots; a slot is free,
// holds a posted receive, or holds a message being echoed.
type session struct {
	log   zerolog.Logger
	ep    *ep.EP
	evd   *evd.EVD
	buf   *lmr.LMR
	su    setup
	idle  []int     // free message slots
	echo  []echoMsg // received messages waiting for their echo
	recvs int       // receives posted
}

func (s *server) newSession(su setup) (ss *session, err error) {
	ss = &session{log: s.log, su: su}
	defer func() {
		if err != nil {
			ss.free()
		}
	}()
	if ss.evd, err = evd.Create(s.ia, 6*su.Depth+8, nil, dat.EVDDefault); err != nil {
		return nil, err
	}
	if ss.buf, err = lmr.Alloc(s.ia, s.pz, 3*su.Depth*su.Size, dat.MemPrivAll); err != nil {
		return nil, err
	}
	attr := dat.EPAttr{MaxRecvDTOs: 2 * su.Depth, MaxRequestDTOs: 2 * su.Depth, MaxRecvIOV: 1, MaxRequestIOV: 1}
	if ss.ep, err = ep.Create(s.ia, s.pz, ss.evd, ss.evd, ss.evd, &attr); err != nil {
		return nil, err
	}
	for k := 2*su.Depth - 1; k >= 0; k-- {
		ss.idle = append(ss.idle, k)
	}
	return ss, nil
}

func (ss *session) slot(k int) []dat.LMRTriplet {
	return []dat.LMRTriplet{ss.buf.Triplet((ss.su.Depth+k)*ss.su.Size, ss.su.Size)}
}

// start posts depth receives before the accept, so that the client may
// send as soon as it is connected.
func (ss *session) start() error {
	for ss.recvs < ss.su.Depth {
		if err := ss.postRecv(); err != nil {
			return err
		}
	}
	return nil
}

func (ss *session) postRecv() error {
	k := ss.idle[len(ss.idle)-1]
	if err := ss.ep.PostRecv(ss.slot(k), dat.DTOCookie(k), dat.CompletionDefault); err != nil {
		return err
	}
	ss.idle = ss.idle[:len(ss.idle)-1]
	ss.recvs++
	return nil
}

// routineEcho runs the session until the connection ends: every received
// message is sent back from the slot it arrived in. Before echoing, it
// replaces the consumed receive, so a client that waits for the echo of
// a message before sending one more never finds the server without one.
func (ss *session) routineEcho(ctx context.Context) {
	defer ss.free()
	for {
		ev, _, err := ss.evd.Wait(ctx, 1)
		if err != nil {
			if ctx.Err() != nil {
				ss.shutdown()
			} else {
				ss.log.Warn().Err(err).Msg("evd_wait")
			}
			return
		}
		switch ev.Number {
		case dat.ConnectionEventEstablished:
			ss.log.Debug().Msg("established")
		case dat.ConnectionEventDisconnected, dat.ConnectionEventBroken:
			ss.log.Debug().Stringer("event", ev.Number).Msg("connection ended")
			return
		case dat.DTOCompletionEvent:
			d := ev.DTO
			if d.Status != dat.DTOSuccess {
				if d.Status != dat.DTOErrFlushed {
					ss.log.Warn().Stringer("op", d.Op).Stringer("status", d.Status).Msg("DTO failed")
				}
				continue
			}
			k := int(d.Cookie)
			if d.Op == dat.DTOSend {
				ss.idle = append(ss.idle, k)
			} else {
				ss.recvs--
				ss.echo = append(ss.echo, echoMsg{slot: k, n: int(d.Length)})
			}
			if err := ss.pump(); err != nil {
				ss.log.Warn().Err(err).Msg("echo")
				ss.ep.Disconnect(dat.CloseAbrupt)
			}
		default:
			ss.log.Debug().Stringer("event", ev.Number).Msg("event")
		}
	}
}

// pump echoes queued messages while a free slot can replace the receive.
func (ss *session) pump() error {
	for len(ss.echo) > 0 && (ss.recvs >= ss.su.Depth || len(ss.idle) > 0) {
		if ss.recvs < ss.su.Depth {
			if err := ss.postRecv(); err != nil {
				return err
			}
		}
		m := ss.echo[0]
		ss.echo = ss.echo[1:]
		iov := ss.slot(m.slot)
		iov[0].SegmentLength = uint32(m.n)
		if err := ss.ep.PostSend(iov, dat.DTOCookie(m.slot), dat.CompletionDefault); err != nil {
			return err
		}
	}
	return nil
}

// shutdown ends the connection when the server stops.
func (ss *session) shutdown() {
	if ss.ep.Disconnect(dat.CloseAbrupt) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for {
		ev, _, err := ss.evd.Wait(ctx, 1)
		if err != nil || ev.Number == dat.ConnectionEventDisconnected || ev.Number == dat.ConnectionEventBroken {
			return
		}
	}
}

func (ss *session) free() {
	if ss.ep != nil {
		ss.ep.Free()
	}
	if ss.buf != nil {
		ss.buf.Free()
	}
	if ss.evd != nil {
		ss.evd.Free()
	}
}

// echoMsg is a received message: its slot and length.
type echoMsg struct{ slot, n int }
