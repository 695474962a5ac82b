#!/usr/bin/env python3
"""The kernel's side of the rds_rdma interop tests (runs in the lab VM that
has rds_rdma loaded): AF_RDS sockets on the RDS-over-RDMA transport
(SO_RDS_TRANSPORT = RDS_TRANS_IB), driven by the Go tests in the other VM
over a TCP control connection.

  kpeer.py ADDR CTLPORT

Each request is one JSON object on a line, each answer one line:
{"ok": true, ...} or {"ok": false, "err": "..."}. A request with "bg": ID
runs in a thread of its own and answers at once; {"op": "wait", "id": ID}
returns its answer when it is done. Operations:

  open port [rcvbuf] [sndbuf]   bind a socket (8 MiB buffers by default)
  close port | closeall
  send port dst first sizes [dontwait]
                                send message first+k of sizes[k] bytes to dst
                                ("ip:port"), in order; EAGAIN is retried once
                                the send buffer has room, ENOBUFS after a
                                congestion map update, and counted
                                ("enobufs"); answers
                                its progress, and the kernel's
                                cong_update_received after the last message
  progress port                 how far port's last send got: messages sent,
                                ENOBUFS, seconds
  probe port dst                one non-blocking 0-byte send: "sent" or the
                                errno's name (ENOBUFS: dst's port congested)
  recv port first sizes [timeout]
                                receive len(sizes) messages and check each is
                                message first+k of sizes[k] bytes: nothing
                                lost, duplicated, reordered or changed
  echo port count [timeout]     send each of count messages back to its sender
  ping peer count [timeout]     rds-ping: 0-byte messages from a socket to the
                                peer's port 0, each answered by a pong from 0
  counter name                  the value of an RDS counter (rds-info -c)
  counters                      every RDS counter that is not 0
  waitcounter name above [timeout]
                                wait until that counter exceeds above
  sh cmd                        run a shell command; its output in "out"
  diag                          this VM's RDS counters, RDMA devices'
                                hw_counters and QPs (rdma resource show
                                qp): where an RDMA op that never completed
                                stopped
  rdmamap port dst size first write
                                zerocopy (rds-rdma(7)): map size bytes with
                                RDS_CMSG_RDMA_MAP on a 0-byte message to dst
                                (USE_ONCE; write: READWRITE, else holding
                                pattern(first) for the peer to read), then
                                wait for one message on port and answer the
                                cookie and whether the buffer holds
                                pattern(first) (diag too when none came)
  rdmaargs port dst [cookie] size first write [remote_addr] [badkey]
                                an RDMA op on the peer's cookie with
                                RDS_CMSG_RDMA_ARGS (NOTIFY_ME), tied to a
                                message of first; write: our buffer, holding
                                pattern(first), goes to the peer; read: the
                                peer's comes into it. Without cookie, the
                                cookie is the RDS_CMSG_RDMA_DEST of the next
                                message on port (badkey: its R_Key xor
                                badkey). Answers the status notification,
                                the cookie and, for a read, the check; an op
                                whose status is missing answers diag too

Message k's bytes are pattern(k, n): its 8-byte big-endian index then a
byte ramp starting at k % 251, cut to n bytes (tests/rdsib makes the same).
"""
import ctypes, errno, glob, json, os, select, socket, struct, subprocess, sys, threading, time, zlib

AF_RDS, SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB = 21, 276, 8, 0
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33
RDS_INFO_COUNTERS = 10000
RDS_CMSG_RDMA_ARGS, RDS_CMSG_RDMA_DEST, RDS_CMSG_RDMA_MAP, RDS_CMSG_RDMA_STATUS = 1, 2, 3, 4
RDS_RDMA_READWRITE, RDS_RDMA_FENCE, RDS_RDMA_INVALIDATE, RDS_RDMA_USE_ONCE = 1, 2, 4, 8
RDS_RDMA_NOTIFY_ME = 0x0020

BASE = bytes(j % 251 for j in range((1 << 20) + 251))


def pattern(k, n):
    return (struct.pack(">Q", k & (1 << 64) - 1) + BASE[k % 251:k % 251 + n])[:n]


socks, socks_mu = {}, threading.Lock()
jobs = {}
progress = {}  # port: how far its last send got


def sock(port):
    with socks_mu:
        return socks[port]


def op_open(r):
    s = socket.socket(AF_RDS, socket.SOCK_SEQPACKET, 0)
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, r.get("sndbuf", 8 << 20))
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, r.get("rcvbuf", 8 << 20))
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB)
    s.bind((ADDR, r["port"]))
    with socks_mu:
        socks[s.getsockname()[1]] = s
    return {"port": s.getsockname()[1]}


def op_close(r):
    with socks_mu:
        socks.pop(r["port"]).close()
    return {}


def op_closeall(r):
    with socks_mu:
        for s in socks.values():
            s.close()
        socks.clear()
    return {}


def dst(d):
    ip, port = d.rsplit(":", 1)
    return ip, int(port)


def sendmsg(s, data, to, anc, deadline, counts):
    while True:
        try:
            return s.sendmsg([data], anc, socket.MSG_DONTWAIT, to)
        except OSError as e:
            if e.errno not in (errno.ENOBUFS, errno.EAGAIN) or time.time() > deadline:
                raise
            p = select.poll()
            if e.errno == errno.ENOBUFS:
                # The destination port is congested. POLLOUT tells nothing
                # of that (the send buffer has room: waiting for it would
                # spin); a congestion map update raises POLLWRBAND (rds(7)).
                counts[0] += 1
                p.register(s, select.POLLWRBAND)
            else:
                p.register(s, select.POLLOUT)
            p.poll(100)


def op_send(r):
    s, to, counts = sock(r["port"]), dst(r["dst"]), [0]
    t0 = time.time()
    deadline = t0 + r.get("timeout", 120)
    prog = progress[r["port"]] = {"sent": 0, "of": len(r["sizes"]), "enobufs": 0}
    for k, n in enumerate(r["sizes"]):
        sendmsg(s, pattern(r["first"] + k, n), to, [], deadline, counts)
        prog.update(sent=k + 1, enobufs=counts[0], secs=round(time.time() - t0, 3))
    # The congestion maps received by then tell a test whether a map
    # could have refused any of these messages.
    prog["cong_update_received"] = counters()["cong_update_received"]
    return dict(prog)


def op_probe(r):
    try:
        sock(r["port"]).sendmsg([b""], [], socket.MSG_DONTWAIT, dst(r["dst"]))
        return {"probe": "sent"}
    except OSError as e:
        return {"probe": errno.errorcode.get(e.errno, str(e.errno))}


def op_progress(r):
    return dict(progress.get(r["port"], {}))


def recv(s, timeout, n=(1 << 20) + 1):
    rd, _, _ = select.select([s], [], [], timeout)
    if not rd:
        raise TimeoutError("nothing on port %d for %gs" % (s.getsockname()[1], timeout))
    return s.recvfrom(n)


def op_recv(r):
    s, first, t = sock(r["port"]), r["first"], r.get("timeout", 60)
    srcs = set()
    for k, n in enumerate(r["sizes"]):
        data, src = recv(s, t)
        srcs.add("%s:%d" % src)
        if data != pattern(first + k, n):
            got = struct.unpack(">Q", data[:8])[0] if len(data) >= 8 else -1
            raise ValueError("message %d: %d bytes (index %d), want %d bytes" % (first + k, len(data), got, n))
    return {"srcs": sorted(srcs)}


def op_echo(r):
    s, t = sock(r["port"]), r.get("timeout", 60)
    for _ in range(r["count"]):
        data, src = recv(s, t)
        sendmsg(s, data, src, [], time.time() + t, [0])
    return {}


def op_ping(r):
    s = socket.socket(AF_RDS, socket.SOCK_SEQPACKET, 0)
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB)
    s.bind((ADDR, 0))
    try:
        rtts = []
        for _ in range(r["count"]):
            t0 = time.time()
            s.sendto(b"", (r["peer"], 0))
            data, src = recv(s, r.get("timeout", 10), 64)
            if data or src[1] != 0:
                raise ValueError("pong of %d bytes from port %d" % (len(data), src[1]))
            rtts.append(time.time() - t0)
        return {"rtts": rtts}
    finally:
        s.close()


def op_counter(r):
    v = counters().get(r["name"])
    if v is None:
        raise KeyError(r["name"])
    return {"value": v}


def op_counters(r):
    return {"counters": {k: v for k, v in counters().items() if v}}


def counters():
    s = socket.socket(AF_RDS, socket.SOCK_SEQPACKET, 0)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(1 << 16)
        ln = ctypes.c_uint32(len(buf))
        size = libc.getsockopt(s.fileno(), SOL_RDS, RDS_INFO_COUNTERS, buf, ctypes.byref(ln))
        if size <= 0:
            raise OSError(ctypes.get_errno(), "RDS_INFO_COUNTERS")
        b = buf.raw[:ln.value]
        return {b[i:i + 32].split(b"\0")[0].decode(): struct.unpack("<Q", b[i + 32:i + 40])[0]
                for i in range(0, len(b) - size + 1, size)}
    finally:
        s.close()


def op_waitcounter(r):
    deadline = time.time() + r.get("timeout", 60)
    while True:
        v = op_counter(r)["value"]
        if v > r["above"]:
            return {"value": v}
        if time.time() > deadline:
            raise TimeoutError("%s stayed at %d" % (r["name"], v))
        time.sleep(0.02)


def op_diag(r):
    d = {"counters": {k: v for k, v in counters().items() if v}, "hw_counters": {}}
    for path in sorted(glob.glob("/sys/class/infiniband/*/ports/*/hw_counters")):
        dev = path.split("/")[4]
        for name in sorted(os.listdir(path)):
            try:
                with open(os.path.join(path, name)) as f:
                    v = int(f.read())
            except (OSError, ValueError):
                continue
            if v:
                d["hw_counters"][dev + "/" + name] = v
    try:
        p = subprocess.run(["rdma", "resource", "show", "qp"], capture_output=True, text=True, timeout=30)
        d["qps"] = p.stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError) as e:
        d["qps"] = str(e)
    return d


class Stuck(Exception):
    """An op that did not end, with op_diag's answer taken then: the
    QPs are still there, and their PSNs tell where the op stopped."""

    def __init__(self, msg):
        super().__init__(msg)
        self.diag = op_diag({})


def op_sh(r):
    p = subprocess.run(r["cmd"], shell=True, capture_output=True, text=True, timeout=r.get("timeout", 120))
    if p.returncode:
        raise RuntimeError("%s: rc %d: %s%s" % (r["cmd"], p.returncode, p.stdout, p.stderr))
    return {"out": p.stdout}


# Zerocopy (rds-rdma(7)): struct rds_iovec {u64 addr, u64 bytes};
# rds_get_mr_args {rds_iovec vec; u64 cookie_addr; u64 flags};
# rds_rdma_args {u64 cookie; rds_iovec remote_vec; u64 local_vec_addr;
# u64 nr_local; u64 flags; u64 user_token};
# rds_rdma_notify {u64 user_token; s32 status}.
def rdma_buffer(n):
    return ctypes.create_string_buffer(max(n, 1))


def op_rdmamap(r):
    s, t, n = sock(r["port"]), r.get("timeout", 60), r["size"]
    buf, cookie = rdma_buffer(n), ctypes.c_uint64(0)
    flags = RDS_RDMA_USE_ONCE
    if r["write"]:
        flags |= RDS_RDMA_READWRITE
    else:
        ctypes.memmove(buf, pattern(r["first"], n), n)
    args = struct.pack("=QQQQ", ctypes.addressof(buf), n, ctypes.addressof(cookie), flags)
    sendmsg(s, b"", dst(r["dst"]), [(SOL_RDS, RDS_CMSG_RDMA_MAP, args)], time.time() + t, [0])
    try:
        data, src = recv(s, t)
    except TimeoutError as e:
        raise Stuck(str(e))
    got = buf.raw[:n]
    return {"cookie": cookie.value, "msg": len(data), "ok_pattern": got == pattern(r["first"], n),
            "crc": zlib.crc32(got)}


def op_rdmaargs(r):
    s, t, n = sock(r["port"]), r.get("timeout", 60), r["size"]
    cookie = r.get("cookie")
    if cookie is None:
        rd, _, _ = select.select([s], [], [], t)
        if not rd:
            raise TimeoutError("no message with a cookie on port %d" % r["port"])
        _, anc, _, _ = s.recvmsg(64, 256)
        for lvl, typ, v in anc:
            if lvl == SOL_RDS and typ == RDS_CMSG_RDMA_DEST:
                cookie = struct.unpack("=Q", v[:8])[0]
        if cookie is None:
            raise ValueError("message without RDS_CMSG_RDMA_DEST")
        cookie ^= r.get("badkey", 0)
    buf = rdma_buffer(n)
    if r["write"]:
        ctypes.memmove(buf, pattern(r["first"], n), n)
    vec = struct.pack("=QQ", ctypes.addressof(buf), n)
    vecbuf = ctypes.create_string_buffer(vec, len(vec))
    flags = RDS_RDMA_NOTIFY_ME | (RDS_RDMA_READWRITE if r["write"] else 0) | RDS_RDMA_FENCE
    args = struct.pack("=QQQQQQQ", cookie, r.get("remote_addr", 0), n, ctypes.addressof(vecbuf), 1, flags, 0x1234)
    sendmsg(s, pattern(r["first"], 64), dst(r["dst"]), [(SOL_RDS, RDS_CMSG_RDMA_ARGS, args)], time.time() + t, [0])
    # The status comes as a 0-byte message with RDS_CMSG_RDMA_STATUS.
    rd, _, _ = select.select([s], [], [], t)
    if not rd:
        raise Stuck("no RDMA status in %gs" % t)
    data, anc, flags, src = s.recvmsg(64, 256)
    status = None
    for lvl, typ, v in anc:
        if lvl == SOL_RDS and typ == RDS_CMSG_RDMA_STATUS:
            token, status = struct.unpack("=Qi", v[:12])
    got = buf.raw[:n]
    res = {"status": status, "cookie": cookie, "ok_pattern": got == pattern(r["first"], n), "crc": zlib.crc32(got)}
    if status is None:
        res["diag"] = op_diag({})
    return res


def run(r):
    try:
        res = globals()["op_" + r["op"]](r)
        res["ok"] = True
    except Exception as e:
        res = {"ok": False, "err": "%s: %s" % (type(e).__name__, e)}
        if isinstance(e, Stuck):
            res["diag"] = e.diag
    return res


def op_wait(r):
    th, box = jobs.pop(r["id"])
    th.join()
    return box[0]


def serve(c):
    f = c.makefile("rwb", buffering=0)
    for line in f:
        r = json.loads(line)
        if r["op"] == "wait":
            res = op_wait(r)
        elif "bg" in r:
            box = [None]
            th = threading.Thread(target=lambda b=box, q=r: b.__setitem__(0, run(q)), daemon=True)
            jobs[r["bg"]] = (th, box)
            th.start()
            res = {"ok": True}
        else:
            res = run(r)
        f.write((json.dumps(res) + "\n").encode())


ADDR = sys.argv[1]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((ADDR, int(sys.argv[2])))
ls.listen(1)
print("kpeer listening", flush=True)
while True:
    c, _ = ls.accept()
    try:
        serve(c)
    except (ConnectionError, OSError) as e:
        print("kpeer control connection:", e, flush=True)
    finally:
        c.close()
        op_closeall({})
