#!/usr/bin/env python3
"""Measures, on this kernel over loopback, what the Logstash client's resend window rests on (Linux only).

  python3 Tests/Probes/tcp_window_probe.py

1. A collector that stops reading: how many bytes it holds unread compared with the largest receive window it
   advertised (tcpi_snd_wnd, read on the sender). The client keeps 2x that window (plus its send buffer) unforgotten.
2. A collector that reads as fast as it can: how large its advertised window grows (a fixed 16 MiB window is
   smaller than what such a peer can hold).
3. A graceful close: the sender's TCP state when it reads the peer's FIN, for a peer that read everything and
   for one that half-closed on its own without reading (the client trusts only states 5, 6, 7 with nothing unacked).
Every loop is bounded in time; only 127.0.0.1 is used.
"""
import fcntl, socket, struct, termios, threading, time

TCP_INFO_LEN, SND_WND, SO_RCVBUFFORCE = 232, 228, 33

def window(sock):
    return struct.unpack_from("I", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN), SND_WND)[0]

def listener(rcvbuf=0):
    srv = socket.socket()
    if rcvbuf:
        try:
            srv.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
        except PermissionError:
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    srv.bind(("127.0.0.1", 0)); srv.listen(1)
    return srv

def non_reader(rcvbuf):
    srv = listener(rcvbuf); peer = []
    threading.Thread(target=lambda: peer.append(srv.accept()[0]), daemon=True).start()
    c = socket.create_connection(srv.getsockname()); c.setblocking(False)
    chunk = (b"x" * 299 + b"\n") * 3000; largest = 0; stalls = 0; t0 = time.time()
    while time.time() - t0 < 20 and stalls < 100:
        try: c.send(chunk)
        except BlockingIOError: stalls += 1; time.sleep(0.01)
        largest = max(largest, window(c))
    unread = struct.unpack("I", fcntl.ioctl(peer[0], termios.FIONREAD, b"\0" * 4))[0]
    print(f"non-reading peer, SO_RCVBUF {rcvbuf or 'default'}: holds {unread} bytes unread, largest window {largest}, ratio {unread / largest:.2f}")
    c.close(); peer[0].close(); srv.close()

def fast_reader():
    srv = listener()
    def read():
        s = srv.accept()[0]
        while s.recv(1 << 20): pass
    threading.Thread(target=read, daemon=True).start()
    c = socket.create_connection(srv.getsockname())
    chunk = (b"x" * 299 + b"\n") * 3000; largest = 0; t0 = time.time()
    while time.time() - t0 < 5:
        c.sendall(chunk); largest = max(largest, window(c))
    print(f"fast reading peer: largest advertised window {largest} bytes")
    c.close(); srv.close()

def close_states(size, peer_reads):
    srv = listener()
    def peer():
        s = srv.accept()[0]
        if peer_reads:
            while s.recv(1 << 16): pass
            s.close()
        else:
            time.sleep(0.3); s.shutdown(socket.SHUT_WR); time.sleep(2); s.close()
    threading.Thread(target=peer, daemon=True).start()
    c = socket.create_connection(srv.getsockname()); c.settimeout(5)
    data = (b"y" * 299 + b"\n") * (size // 300); sent = 0; c.setblocking(False); t0 = time.time()
    while sent < len(data) and time.time() - t0 < 1:
        try: sent += c.send(data[sent:sent + 65536])
        except BlockingIOError: time.sleep(0.001)
    c.shutdown(socket.SHUT_WR); c.setblocking(True); c.settimeout(5); c.recv(10)
    info = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    state, unacked = info[0], struct.unpack_from("I", info, 24)[0]
    who = "peer read everything" if peer_reads else "peer half-closed without reading"
    print(f"close after {size} bytes, {who}: TCP state {state}, unacked segments {unacked}, proof: {state in (5, 6, 7) and unacked == 0}")
    c.close(); srv.close()

if __name__ == "__main__":
    non_reader(0); non_reader(64 << 20)
    fast_reader()
    for size in (3000, 600_000, 5_000_000):
        close_states(size, True); close_states(size, False)
