#!/usr/bin/env python3
"""Checks the kernel's RDS inside a lab VM (as root).

  rds.py [--addr ADDR] [--no-local] [--peer IP:PORT] [--port PORT]

Without --no-local: two sockets on ADDR and two on 127.0.0.1 exchange
messages of 1 B to 1 MiB (RDS_MAX_MSG_SIZE) both ways, each checked byte for
byte with its source address; three small messages arrive as three; and a
message of 1 MiB + 1 byte fails with EMSGSIZE.

With --peer: a socket bound to ADDR:PORT sends GREETING to the RDS endpoint
IP:PORT, which makes the kernel open an RDS/TCP connection to IP:16385, and
waits up to 20 s for one reply, printed as "reply from IP:PORT: <bytes>".

Prints "RDS smoke: OK" and exits 0 when every check passed.
"""
import argparse
import errno
import os
import socket
import sys

AF_RDS = 21            # linux/socket.h
SOL_RDS = 276
SO_RDS_TRANSPORT = 8   # linux/rds.h
RDS_TRANS_TCP = 2
SO_SNDBUFFORCE = 32    # asm-generic/socket.h
SO_RCVBUFFORCE = 33
MAX_MSG = 1 << 20
GREETING = b"kernel rds_tcp greets the peer"


def rds_socket(addr, port):
    s = socket.socket(AF_RDS, socket.SOCK_SEQPACKET, 0)
    # The kernel refuses a message larger than half of SO_SNDBUF; the
    # default buffer holds about 100 KiB, and only the FORCE variants go past
    # net.core.wmem_max.
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 4 * MAX_MSG)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 4 * MAX_MSG)
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_TCP)
    s.bind((addr, port))
    return s


def check_local(addr, port_a, port_b):
    a, b = rds_socket(addr, port_a), rds_socket(addr, port_b)
    for size in (1, 64, 4096, 65536, MAX_MSG):
        data = os.urandom(size)
        a.sendto(data, (addr, port_b))
        got, src = b.recvfrom(MAX_MSG + 1)
        if got != data or src != (addr, port_a):
            sys.exit("%s: %d B message came back as %d B from %s" % (addr, size, len(got), src))
        b.sendto(data[::-1], src)
        got, src = a.recvfrom(MAX_MSG + 1)
        if got != data[::-1] or src != (addr, port_b):
            sys.exit("%s: %d B answer came back as %d B from %s" % (addr, size, len(got), src))
        print("%s: %d B there and back" % (addr, size))
    words = [b"first", b"second", b"third"]
    for w in words:
        a.sendto(w, (addr, port_b))
    got = [b.recv(64) for _ in words]
    if got != words:
        sys.exit("%s: message boundaries lost: %r" % (addr, got))
    print("%s: three messages arrive as three" % addr)
    try:
        a.sendto(bytes(MAX_MSG + 1), (addr, port_b))
        sys.exit("%s: a message of 1 MiB + 1 byte was accepted" % addr)
    except OSError as e:
        if e.errno != errno.EMSGSIZE:
            sys.exit("%s: 1 MiB + 1 byte failed with %s, want EMSGSIZE" % (addr, e))
    print("%s: 1 MiB + 1 byte refused with EMSGSIZE" % addr)
    a.close()
    b.close()


def greet(addr, port, peer):
    ip, pport = peer.rsplit(":", 1)
    s = rds_socket(addr, port)
    s.settimeout(20)
    s.sendto(GREETING, (ip, int(pport)))
    print("sent %d B from %s:%d to %s" % (len(GREETING), addr, port, peer))
    try:
        data, src = s.recvfrom(MAX_MSG)
    except OSError as e:
        sys.exit("no reply from %s: %s" % (peer, e))
    print("reply from %s:%d: %r" % (src[0], src[1], data))
    s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--addr", help="local address (default: eth0's)")
    ap.add_argument("--no-local", action="store_true", help="skip the local exchanges")
    ap.add_argument("--peer", help="IP:PORT of a remote RDS endpoint to greet")
    ap.add_argument("--port", type=int, default=18005, help="local port for --peer")
    o = ap.parse_args()
    addr = o.addr
    if addr is None:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("192.168.77.1", 9))  # no packet: only picks the source
        addr = probe.getsockname()[0]
        probe.close()
    if not o.no_local:
        check_local(addr, 18001, 18002)
        check_local("127.0.0.1", 18003, 18004)
    if o.peer:
        greet(addr, o.port, o.peer)
    print("RDS smoke: OK")


if __name__ == "__main__":
    main()
