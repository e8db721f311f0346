#!/usr/bin/env python3
"""A stand-in for systemd's notify socket: binds a unix datagram socket at PATH and
appends each datagram it receives to LOG, one line per assignment (READY=1, STATUS=...),
each datagram ended by a line "--". Runs until killed.
    notify_socket.py PATH LOG
"""
import os
import socket
import sys

path, log = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path + ".tmp")
os.rename(path + ".tmp", path)  # appears only once it is bound: a test can wait for it
with open(log, "a", buffering=1, encoding="utf-8", errors="replace") as out:
    while True:
        data = sock.recv(4096)
        out.write(data.decode("utf-8", "replace").rstrip("\n") + "\n--\n")
