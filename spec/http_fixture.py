"""A loopback HTTP server for spec/download_spec.lua (never reachable from outside 127.0.0.1).

    python3 spec/http_fixture.py ROOT PORT_FILE LOG_FILE LIFETIME_S

Binds 127.0.0.1 on a free port, writes the port to PORT_FILE once listening, appends one line
per request to LOG_FILE ("GET /ok/file range=bytes=10-"), and exits by itself after LIFETIME_S
seconds even if nobody stops it. The first path element picks the behaviour:
  /ok/NAME        ROOT/NAME, with Range support (206 + Content-Range; 416 past the end)
  /norange/NAME   ROOT/NAME, always whole (200), ignoring any Range header
  /missing/NAME   404
  /cut/NAME       promises the whole file (Content-Length) but sends half of it, then closes
  /hang/NAME      accepts and says nothing for 20 s
  /redirect/NAME  302 to /ok/NAME
"""
import http.server
import os
import re
import sys
import threading
import time

ROOT, PORT_FILE, LOG_FILE, LIFETIME = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
log_lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_bytes(self, code, body, headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        rng = self.headers.get("Range")
        with log_lock, open(LOG_FILE, "a") as log:
            log.write("GET %s range=%s\n" % (self.path, rng or "-"))
        parts = self.path.split("/", 2)
        mode, name = (parts[1], parts[2]) if len(parts) == 3 else ("", "")
        path = os.path.join(ROOT, os.path.basename(name))
        if mode == "missing" or not os.path.isfile(path):
            return self.send_bytes(404, b"not found\n")
        if mode == "redirect":
            return self.send_bytes(302, b"", [("Location", "/ok/" + name)])
        if mode == "hang":
            time.sleep(20)
            return
        with open(path, "rb") as f:
            data = f.read()
        if mode == "cut":
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        m = re.match(r"bytes=(\d+)-(\d*)$", rng or "") if mode == "ok" else None
        if m:
            start = int(m.group(1))
            end = int(m.group(2)) if m.group(2) else len(data) - 1
            if start >= len(data):
                return self.send_bytes(416, b"", [("Content-Range", "bytes */%d" % len(data))])
            return self.send_bytes(206, data[start:end + 1],
                                   [("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))])
        return self.send_bytes(200, data)


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    tmp = PORT_FILE + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, PORT_FILE)
    server.serve_forever()


if __name__ == "__main__":
    main()
