package rdsoverdat

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

// Info shows what rds-info needs: sockets with their queued bytes,
// connections with their paths' sequence numbers, both congestion maps
// and the counters, and survives a JSON round trip.
func TestInfo(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		const rcvbuf = 1000
		a := mustBind(t, st, ap(as[0], 0))
		b := mustBind(t, st, ap(as[1], 7), RecvBuffer(rcvbuf))
		// Three 500-byte messages that b does not read: over SO_RCVBUF,
		// so b's port is congested on its node and, once the map
		// arrives, in a's view of its peer. (NextTX is at least 4 after
		// them; tcp sends a handshake probe too.)
		for range 3 {
			if _, err := a.SendTo(make([]byte, 500), b.BoundAddr(), 0); err != nil {
				t.Fatal(err)
			}
		}
		// recv_delivered is counted just after a message becomes visible
		// on the socket: wait for the counter too, not only the bytes.
		eventually(t, 5*time.Second, "b's messages and a's view of its congestion", func() bool {
			_, rq := b.Buffered()
			ni := st.nodeAt(as[0]).Info()
			return rq == 1500 && counter(st.nodeAt(as[1]).Info().Counters, "recv_delivered") == 3 &&
				len(ni.Conns) == 1 && slices.Equal(ni.Conns[0].RemoteCongested, []uint16{7})
		})

		info := st.Info()
		if len(info.Nodes) != 2 || info.Nodes[0].Addr != as[0] || info.Nodes[1].Addr != as[1] {
			t.Fatalf("nodes %+v", info.Nodes)
		}
		na, nb := info.Nodes[0], info.Nodes[1]
		if !slices.Equal(nb.Congested, []uint16{7}) || len(na.Congested) != 0 {
			t.Errorf("local congestion: a %v, b %v", na.Congested, nb.Congested)
		}
		if len(nb.Sockets) != 1 {
			t.Fatalf("b's sockets %+v", nb.Sockets)
		}
		sb := nb.Sockets[0]
		if sb.Bound != b.BoundAddr() || sb.RecvBuffer != rcvbuf || sb.RecvQueued != 1500 || !sb.Congested ||
			sb.Transport != st.defaultTransport().Name() {
			t.Errorf("b's socket %+v", sb)
		}
		c := na.Conns[0]
		if c.Local != as[0] || c.Remote != as[1] || len(c.Paths) == 0 || !c.Paths[0].Up ||
			c.Paths[0].NextTX < 4 || c.Stats.Sent < 3 {
			t.Errorf("a's connection %+v", c)
		}
		if v := counter(na.Counters, "send_queued"); v != 3 {
			t.Errorf("a's send_queued = %d", v)
		}
		if v := counter(nb.Counters, "recv_delivered"); v != 3 {
			t.Errorf("b's recv_delivered = %d", v)
		}

		raw, err := json.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		var back Info
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, info) {
			t.Errorf("JSON round trip:\n got %+v\nwant %+v", back, info)
		}
	})
}

func counter(cs []Counter, name string) uint64 {
	for _, c := range cs {
		if c.Name == name {
			return c.Value
		}
	}
	return 1<<64 - 1
}

// Every NodeStats field has a counter, with a distinct name, in field
// order: a counter added to NodeStats without a name here fails.
func TestCountersCoverNodeStats(t *testing.T) {
	var s NodeStats
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		v.Field(i).SetUint(uint64(i + 1))
	}
	cs := s.Counters()
	if len(cs) != v.NumField() {
		t.Fatalf("%d counters for %d NodeStats fields", len(cs), v.NumField())
	}
	seen := map[string]bool{}
	for i, c := range cs {
		if c.Value != uint64(i+1) || seen[c.Name] {
			t.Errorf("counter %d %q = %d (field %s)", i, c.Name, c.Value, v.Type().Field(i).Name)
		}
		seen[c.Name] = true
	}
}

// A kernel stack has no nodes of its own to show.
func TestInfoKernelStack(t *testing.T) {
	info := NewStack(Config{Kernel: true}).Info()
	if !info.Kernel || len(info.Nodes) != 0 {
		t.Errorf("%+v", info)
	}
}
