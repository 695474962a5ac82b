#!/usr/bin/env python3
"""Kernel-side RDS echo for the rdsoverdat interop tests (runs in the lab VM).

  python3 rds_kernel_echo.py ADDR PORT COUNT [TIMEOUT]
  python3 rds_kernel_echo.py ping ADDR PEER COUNT [TIMEOUT]

Binds an AF_RDS socket (SO_RDS_TRANSPORT = RDS_TRANS_TCP) to ADDR:PORT, then
COUNT times receives one datagram, prints "kernel recv LEN from IP:PORT" and
answers it with b"kernel echo: " + the first 64 payload bytes. Exits 0 after
COUNT messages, 1 on timeout. The ping form sends COUNT rds-ping style
0-byte messages to PEER port 0 and prints "kernel pong LEN from IP:PORT" for
each answer.
"""
import socket, sys

AF_RDS, SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_TCP = 21, 276, 8, 2

def rds_socket():
    s = socket.socket(AF_RDS, socket.SOCK_SEQPACKET, 0)
    for opt in (32, 33):  # SO_SNDBUFFORCE, SO_RCVBUFFORCE
        s.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_TCP)
    return s


if sys.argv[1] == "ping":
    addr, peer, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
    s = rds_socket()
    s.bind((addr, 0))
    s.settimeout(float(sys.argv[5]) if len(sys.argv) > 5 else 20)
    try:
        for _ in range(count):
            s.sendto(b"", (peer, 0))
            data, src = s.recvfrom(64)
            print("kernel pong %d from %s:%d" % (len(data), src[0], src[1]), flush=True)
    except socket.timeout:
        print("kernel timeout", flush=True)
        sys.exit(1)
    sys.exit(0)

addr, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 20
s = socket.socket(AF_RDS, socket.SOCK_SEQPACKET, 0)
for opt in (32, 33):  # SO_SNDBUFFORCE, SO_RCVBUFFORCE
    s.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)
s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_TCP)
s.bind((addr, port))
s.settimeout(timeout)
print("kernel listening on %s:%d" % (addr, port), flush=True)
try:
    for _ in range(count):
        data, src = s.recvfrom(1 << 21)
        print("kernel recv %d from %s:%d" % (len(data), src[0], src[1]), flush=True)
        s.sendto(b"kernel echo: " + data[:64], src)
except socket.timeout:
    print("kernel timeout", flush=True)
    sys.exit(1)
