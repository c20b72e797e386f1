#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in for systemd's notify socket (test_systemd_notify.sh): binds a
unix datagram socket at PATH and appends every message to OUT, one line per
assignment, each prefixed with the seconds since the listener started:
    0.512 READY=1
    0.512 STATUS=running: 1 card, ...
Runs until killed."""
import os
import socket
import sys
import time

path, out = sys.argv[1], sys.argv[2]
if os.path.exists(path):
    os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
t0 = time.monotonic()
with open(out, 'a', buffering=1) as f:
    while True:
        msg = s.recv(65536).decode('utf-8', 'replace')
        for line in msg.split('\n'):
            if line:
                f.write(f"{time.monotonic() - t0:.3f} {line}\n")
