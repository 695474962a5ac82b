#!/usr/bin/env python3
"""Kernel-side RDS peer for the rdsoverdat interop tests (runs in the lab VM).

Every socket is AF_RDS/SOCK_SEQPACKET with SO_RDS_TRANSPORT = RDS_TRANS_TCP and
8 MiB SO_SNDBUFFORCE/SO_RCVBUFFORCE (rds_sendmsg refuses a message above
sk_sndbuf/2 with EMSGSIZE) unless --rcvbuf says otherwise. Each command prints
"kernel ready" once its sockets are bound, one line per event, and exits 0 on
success, 1 on a failed check or timeout.

  echo ADDR PORT COUNT         receive COUNT messages, send each back whole
  ports ADDR BASE N            N sockets on BASE..BASE+N-1; each echoes one message
  sink ADDR PORT COUNT [--ctl CTLPORT] [--rcvbuf BYTES]
                               receive COUNT numbered messages (8-byte big-endian
                               index first; COUNT 0: until one that is b"END") and
                               check they arrive in order, exactly once; with --ctl the data socket is not read until a
                               message arrives on CTLPORT (so its queue congests)
  source ADDR PORT DST COUNT SIZE [--pace SECONDS]
                               send COUNT numbered messages of SIZE bytes to DST
                               (ip:port), retrying on ENOBUFS/EAGAIN, pausing between them
  congsource ADDR PORT DST COUNT SIZE --ctl CTLDST [--max N]
                               send numbered messages of SIZE bytes to DST without blocking
                               until the first ENOBUFS and COUNT more after it (fail after
                               N, default 50000, without one), then b"END"; at the first ENOBUFS (DST's port is
                               congested by the peer's map) send b"drain" to CTLDST and retry
                               until the peer's uncongested map lets the message through; the
                               ENOBUFS count goes to CTLDST at the end. Prints the kernel's
                               cong_update_received at the first ENOBUFS and at the resume
  cancelsink ADDR PORT_A PORT_B COUNT_B
                               on PORT_A receive numbered messages until one whose
                               payload is b"END" and check they are a gap-free
                               prefix; on PORT_B receive COUNT_B numbered messages
  ping ADDR PEER COUNT         COUNT rds-ping style 0-byte messages to PEER port 0
  info ADDR [--counters]       print the RDS/TCP sockets and connections of ADDR (and the
                               non-zero RDS counters and queued messages)

Options: --timeout SECONDS (default 60) for every blocking wait.

Every command that sends waits before it exits until the kernel has handed all
its messages to TCP (drain): closing an RDS socket silently discards what is
still queued (rds_release -> rds_send_drop_to), with no reset on either side.
"""
import argparse, ctypes, errno, os, select, socket, struct, sys, time

AF_RDS, SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_TCP = 21, 276, 8, 2
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33
RDS_INFO_COUNTERS, RDS_INFO_CONNECTIONS, RDS_INFO_TCP_SOCKETS = 10000, 10001, 10007
RDS_INFO_SEND_MESSAGES, RDS_INFO_RETRANS_MESSAGES = 10003, 10004
RDS_INFO_CONNECTION_FLAG_CONNECTING, RDS_INFO_CONNECTION_FLAG_CONNECTED = 0x02, 0x04


def rds_socket(addr, port, sndbuf=8 << 20, rcvbuf=8 << 20):
    s = socket.socket(AF_RDS, socket.SOCK_SEQPACKET, 0)
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, sndbuf)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_TCP)
    s.bind((addr, port))
    return s


def say(*a):
    print(*a, flush=True)


def fail(msg):
    say("kernel FAIL", msg)
    sys.exit(1)


def recv(s, timeout, n=(1 << 20) + 1):
    r, _, _ = select.select([s], [], [], timeout)
    if not r:
        fail("timeout on port %d" % s.getsockname()[1])
    return s.recvfrom(n)


def send_retry(s, data, dst, deadline):
    while True:
        try:
            return s.sendto(data, dst)
        except OSError as e:
            if e.errno not in (errno.ENOBUFS, errno.EAGAIN) or time.time() > deadline:
                raise
            time.sleep(0.001)


def parse_dst(d):
    ip, port = d.rsplit(":", 1)
    return ip, int(port)


def drain(socks, timeout, settle=5, gone=10):
    """Wait until the kernel has handed every message of socks to TCP (none
    left in a send queue), then up to settle seconds more for the retransmit
    queues to let go of them too.

    The kernel drops a closing socket's queued messages (rds_release ->
    rds_send_drop_to). With multipath that bites a peer that exits right
    after its last sendto: a message hashed onto a path the smaller-address
    side has not connected yet waits in that path's send queue and vanishes
    with the socket (docs/INTEROP-FINDINGS.md §6). A message already handed
    to TCP is safe unless the connection resets; the kernel frees it from
    the retransmit queue only in rds_tcp_write_space, which an ACK does not
    always call, so the last message can stay listed there long after TCP
    acknowledged it, and that is not waited for beyond settle.

    A peer that exits once it has everything closes the connection, and the
    kernel's rds_send_path_reset then moves what TCP still held back onto the
    send queue, where it stays: only the smaller address (the Go side)
    reconnects. So when no RDS/TCP connection has been up or coming up for
    gone seconds (Go reconnects within ReconnectMax, 1 s), the peer has
    left: the drain says so and ends, and the peer's own checks decide
    whether it got every message."""
    # Matched by source port alone: 6.1 fills in 0.0.0.0 as the addresses
    # of these rows (struct rds_info_message).
    mine = {s.getsockname()[1] for s in socks}

    def left(opt):
        return sum(socket.ntohs(struct.unpack("<H", r[20:22])[0]) in mine for r in info(socks[0], opt))
    deadline, down_since = time.time() + timeout, None
    while left(RDS_INFO_SEND_MESSAGES):
        now = time.time()
        if tcp_conn_live(socks[0]):
            down_since = None
        elif down_since is None:
            down_since = now
        elif now - down_since > gone:
            say("kernel drain: %d messages back in the send queue and no RDS/TCP connection for %gs: "
                "the peer closed it" % (left(RDS_INFO_SEND_MESSAGES), gone))
            return
        if now > deadline:
            fail("%d messages never handed to TCP" % left(RDS_INFO_SEND_MESSAGES))
        time.sleep(0.02)
    settled = time.time() + settle
    while time.time() < settled:
        n = left(RDS_INFO_RETRANS_MESSAGES)
        if n == 0:
            return
        time.sleep(0.02)
    say("kernel drain: %d sent, still listed unacknowledged after %gs" % (n, settle))


def tcp_conn_live(s):
    """Whether an RDS/TCP connection of this host is up or connecting (the
    kernel reports path 0's state; struct rds_info_connection)."""
    for r in info(s, RDS_INFO_CONNECTIONS):
        if r[24:40].split(b"\0")[0] == b"tcp" and r[40] & (
                RDS_INFO_CONNECTION_FLAG_CONNECTING | RDS_INFO_CONNECTION_FLAG_CONNECTED):
            return True
    return False


def cmd_echo(o):
    s = rds_socket(o.addr, o.port)
    say("kernel ready")
    for _ in range(o.count):
        data, src = recv(s, o.timeout)
        say("kernel recv %d from %s:%d" % (len(data), src[0], src[1]))
        send_retry(s, data, src, time.time() + o.timeout)
    drain([s], o.timeout)


def cmd_ports(o):
    socks = [rds_socket(o.addr, o.base + i) for i in range(o.n)]
    say("kernel ready")
    left, deadline = set(socks), time.time() + o.timeout
    while left:
        r, _, _ = select.select(list(left), [], [], max(0, deadline - time.time()))
        if not r:
            fail("%d ports got nothing" % len(left))
        for s in r:
            data, src = s.recvfrom(1 << 16)
            port = s.getsockname()[1]
            s.sendto(b"%d<-%d:" % (port, src[1]) + data, src)
            left.discard(s)
    say("kernel ports ok %d" % o.n)
    drain(socks, o.timeout)
    say("kernel ports drained")


def check_seq(data, want, port):
    if len(data) < 8:
        fail("port %d: short message %r" % (port, data[:16]))
    got = struct.unpack(">Q", data[:8])[0]
    if got != want:
        fail("port %d: message %d where %d was due (lost, duplicated or reordered)" % (port, got, want))


def cmd_sink(o):
    s = rds_socket(o.addr, o.port, rcvbuf=o.rcvbuf or (8 << 20))
    ctl = rds_socket(o.addr, o.ctl) if o.ctl else None
    say("kernel ready")
    if ctl:
        data, src = recv(ctl, o.timeout)
        say("kernel ctl %r from %s:%d: draining" % (data, src[0], src[1]))
    i = 0
    while o.count == 0 or i < o.count:
        data, src = recv(s, o.timeout)
        if o.count == 0 and data == b"END":
            break
        check_seq(data, i, o.port)
        if i % 500 == 0 or i == o.count - 1:
            say("kernel sink %d from %s:%d len %d" % (i, src[0], src[1], len(data)))
        i += 1
    say("kernel sink ok %d in order" % i)
    if ctl:
        # the Go side reports how many ENOBUFS it saw on the control port
        data, src = recv(ctl, o.timeout)
        say("kernel ctl %r" % data)


def cmd_source(o):
    s = rds_socket(o.addr, o.port)
    dst = parse_dst(o.dst)
    say("kernel ready")
    deadline = time.time() + o.timeout
    pad = b"k" * max(0, o.size - 8)
    for i in range(o.count):
        send_retry(s, struct.pack(">Q", i) + pad, dst, deadline)
        if o.pace:
            time.sleep(o.pace)
        if i % 500 == 0:
            say("kernel sent %d" % i)
    say("kernel source sent %d" % o.count)
    drain([s], o.timeout)
    time.sleep(o.linger)


def counter(s, name):
    for r in info(s, RDS_INFO_COUNTERS):
        if r[:32].split(b"\0")[0].decode() == name:
            return struct.unpack("<Q", r[32:40])[0]
    fail("no RDS counter %s" % name)


def cmd_congsource(o):
    s = rds_socket(o.addr, o.port)
    dst, ctl = parse_dst(o.dst), parse_dst(o.ctl)
    say("kernel ready")
    deadline = time.time() + o.timeout
    pad = b"k" * max(0, o.size - 8)
    # Until the peer's map says the port is congested the sends just
    # queue (8 MiB SO_SNDBUF), and on a slow VM that map can take longer
    # than any fixed count: send until the first ENOBUFS (at most --max
    # messages), then COUNT more.
    enobufs, total, i = 0, None, 0
    while True:
        if total is None and i >= o.max:
            fail("%d messages sent, no ENOBUFS: the peer's port never became congested" % i)
        last = i == total
        data = b"END" if last else struct.pack(">Q", i) + pad
        first = True
        while True:
            try:
                s.sendto(data, socket.MSG_DONTWAIT, dst)
                break
            except OSError as e:
                if e.errno not in (errno.ENOBUFS, errno.EAGAIN) or time.time() > deadline:
                    fail("send %d: %s" % (i, e))
                if e.errno == errno.ENOBUFS:
                    enobufs += 1
                    if enobufs == 1:
                        total = i + o.count
                        say("kernel ENOBUFS at message %d cong_update_received %d" % (i, counter(s, "cong_update_received")))
                        s.sendto(b"drain", ctl)
                    elif first:
                        say("kernel ENOBUFS again at message %d" % i)
                    first = False
                time.sleep(0.001)
        if not first:
            say("kernel resumed at message %d after %d ENOBUFS cong_update_received %d" % (
                i, enobufs, counter(s, "cong_update_received")))
        if last:
            break
        i += 1
    say("kernel congsource sent %d enobufs %d" % (total, enobufs))
    s.sendto(b"enobufs %d" % enobufs, ctl)
    drain([s], o.timeout)
    time.sleep(o.linger)


def cmd_cancelsink(o):
    a, b = rds_socket(o.addr, o.port_a), rds_socket(o.addr, o.port_b)
    say("kernel ready")
    k = 0
    while True:
        data, src = recv(a, o.timeout)
        if data == b"END":
            break
        check_seq(data, k, o.port_a)
        k += 1
    say("kernel cancelsink prefix %d then END" % k)
    for i in range(o.count_b):
        data, src = recv(b, o.timeout)
        check_seq(data, i, o.port_b)
    say("kernel cancelsink ok %d on port %d" % (o.count_b, o.port_b))


def cmd_ping(o):
    s = rds_socket(o.addr, 0)
    say("kernel ready")
    for _ in range(o.count):
        s.sendto(b"", (o.peer, 0))
        data, src = recv(s, o.timeout, 64)
        say("kernel pong %d from %s:%d" % (len(data), src[0], src[1]))


def info(s, opt):
    # CPython caps getsockopt's buffer at 1024 bytes; call libc directly.
    # A buffer too small fails with ENOSPC and the length needed.
    libc = ctypes.CDLL(None, use_errno=True)
    n = 1 << 16
    while True:
        buf = ctypes.create_string_buffer(n)
        ln = ctypes.c_uint32(len(buf))
        size = libc.getsockopt(s.fileno(), SOL_RDS, opt, buf, ctypes.byref(ln))
        if size >= 0 or ctypes.get_errno() != errno.ENOSPC:
            break
        n = max(2 * n, ln.value + 4096)
    if size < 0:
        fail("getsockopt %d: %s" % (opt, os.strerror(ctypes.get_errno())))
    b = buf.raw[:ln.value]
    return [b[i:i + size] for i in range(0, len(b) - size + 1, size)] if size else []


def cmd_info(o):
    s = rds_socket(o.addr, 0)
    if o.counters:
        for r in info(s, RDS_INFO_COUNTERS):
            name, v = r[:32].split(b"\0")[0].decode(), struct.unpack("<Q", r[32:40])[0]
            if v:
                say("kernel counter %s %d" % (name, v))
        for opt, what in ((RDS_INFO_SEND_MESSAGES, "send"), (RDS_INFO_RETRANS_MESSAGES, "retrans")):
            for r in info(s, opt):
                seq, ln, la, fa, lp, fp = struct.unpack("<QI4s4sHH", r[:24])
                say("kernel %s queue seq %d len %d %d -> %d" % (what, seq, ln, socket.ntohs(lp), socket.ntohs(fp)))
    for r in info(s, RDS_INFO_TCP_SOCKETS):
        # struct rds_info_tcp_socket: hdr_rem/data_rem are the bytes the
        # kernel still needs for the message it is reassembling; the
        # three sequence numbers are TCP's (rds_tcp_is_acked uses una).
        la, lp, pa, pp, hdr_rem, data_rem, nxt, exp_una, seen_una = struct.unpack("<4sH4sHQQIII", r[:40])
        say("kernel tcp %s:%d -> %s:%d hdr_rem %d data_rem %d sent_nxt %d expected_una %d seen_una %d" % (
            socket.inet_ntoa(la), socket.ntohs(lp), socket.inet_ntoa(pa), socket.ntohs(pp),
            hdr_rem, data_rem, nxt, exp_una, seen_una))
    for r in info(s, RDS_INFO_CONNECTIONS):
        tx, rx, la, fa, tr = struct.unpack("<QQ4s4s16s", r[:40])
        say("kernel conn %s -> %s %s next_tx %d next_rx %d" % (
            socket.inet_ntoa(la), socket.inet_ntoa(fa), tr.split(b"\0")[0].decode(), tx, rx))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--timeout", type=float, default=60)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("echo"); c.add_argument("addr"); c.add_argument("port", type=int); c.add_argument("count", type=int)
    c = sub.add_parser("ports"); c.add_argument("addr"); c.add_argument("base", type=int); c.add_argument("n", type=int)
    c = sub.add_parser("sink"); c.add_argument("addr"); c.add_argument("port", type=int); c.add_argument("count", type=int)
    c.add_argument("--ctl", type=int, default=0); c.add_argument("--rcvbuf", type=int, default=0)
    c = sub.add_parser("source"); c.add_argument("addr"); c.add_argument("port", type=int); c.add_argument("dst")
    c.add_argument("count", type=int); c.add_argument("size", type=int); c.add_argument("--linger", type=float, default=0)
    c.add_argument("--pace", type=float, default=0)
    c = sub.add_parser("congsource"); c.add_argument("addr"); c.add_argument("port", type=int); c.add_argument("dst")
    c.add_argument("count", type=int); c.add_argument("size", type=int); c.add_argument("--ctl", required=True)
    c.add_argument("--linger", type=float, default=0); c.add_argument("--max", type=int, default=50000)
    c = sub.add_parser("cancelsink"); c.add_argument("addr"); c.add_argument("port_a", type=int)
    c.add_argument("port_b", type=int); c.add_argument("count_b", type=int)
    c = sub.add_parser("ping"); c.add_argument("addr"); c.add_argument("peer"); c.add_argument("count", type=int)
    c = sub.add_parser("info"); c.add_argument("addr"); c.add_argument("--counters", action="store_true")
    o = p.parse_args()
    globals()["cmd_" + o.cmd](o)


main()
