#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""half_open.py HOST PORT N SECONDS [SOURCE_IP [reconnect]]: open N plain TCP
connections to HOST:PORT (from SOURCE_IP if given) that never send a byte, so
they never finish libfabric's connection handshake, and hold them for
SECONDS. With "reconnect", every one the server closes is opened again at
once. Prints how many the server closed (end-of-file or reset)."""
import socket
import sys
import time

host, port, n, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
source = sys.argv[5] if len(sys.argv) > 5 else ""
reconnect = len(sys.argv) > 6 and sys.argv[6] == "reconnect"
socks = []
closed_by_server = 0
failed_connects = 0
end = time.monotonic() + seconds


def connect():
    global failed_connects
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if source:
        s.bind((source, 0))
    s.setblocking(False)
    try:
        s.connect_ex((host, port))
        return s
    except OSError:
        failed_connects += 1
        s.close()
        return None


while len(socks) < n:
    s = connect()
    if s:
        socks.append(s)
while time.monotonic() < end:
    time.sleep(0.2)
    for i, s in enumerate(socks):
        if s is None:
            continue
        try:
            if s.recv(1) == b"":
                raise ConnectionResetError
        except BlockingIOError:
            continue
        except OSError:
            pass
        closed_by_server += 1
        s.close()
        socks[i] = connect() if reconnect else None
print(f"closed_by_server={closed_by_server} failed_connects={failed_connects}")
