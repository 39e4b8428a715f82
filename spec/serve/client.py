#!/usr/bin/env python3
"""HTTP clients for spec/serve_spec.lua (Python's standard library only).

  client.py requests FILE        FILE: {port, requests: [{method, path, body?, headers?}]}; prints a JSON list
                                 of {status, headers (lower-case names), body} in the same order.
  client.py concurrent FILE      the same, all at once: each on its own connection, sent past a barrier
  client.py load FILE            FILE: {port, path, clients, seconds, cases: [{body, expected: {gen: rows}}],
                                 reload?: {path, after}}: `clients` threads post for `seconds`, each
                                 answer checked against the expected rows of the generation it names;
                                 prints a JSON summary.
"""
import http.client
import json
import sys
import threading
import time


def one(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return {"status": r.status, "headers": {k.lower(): v for k, v in r.getheaders()},
            "body": data.decode("utf-8", "replace")}


def close(a, b, tol):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return isinstance(a, (int, float)) and abs(a - b) <= tol


def load(spec):
    port, path, cases = spec["port"], spec["path"], spec["cases"]
    stop = time.time() + spec["seconds"]
    lock = threading.Lock()
    summary = {"requests": 0, "failed": 0, "failures": [], "generations": {}, "batch_rows_max": 0,
               "reload": None}

    def fail(msg):
        with lock:
            summary["failed"] += 1
            if len(summary["failures"]) < 5:
                summary["failures"].append(msg)

    def client(i):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        n = 0
        while time.time() < stop:
            case = cases[(i + n) % len(cases)]
            n += 1
            try:
                conn.request("POST", path, body=case["body"], headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                data = r.read()
            except Exception as e:      # a refused or dropped connection is a failed request
                fail("client %d: %r" % (i, e))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                continue
            gen = r.getheader("X-Fastnn-Generation")
            rows = int(r.getheader("X-Fastnn-Batch-Rows") or 0)
            with lock:
                summary["requests"] += 1
                summary["generations"][gen] = summary["generations"].get(gen, 0) + 1
                summary["batch_rows_max"] = max(summary["batch_rows_max"], rows)
            if r.status != 200:
                fail("status %d: %s" % (r.status, data[:200]))
                continue
            want = case["expected"].get(gen)
            got = json.loads(data)["outputs"]
            if want is None or not close(got, want, 1e-4):
                fail("generation %s: outputs %s, expected %s" % (gen, str(got)[:120], str(want)[:120]))
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(spec["clients"])]
    for t in threads:
        t.start()
    if spec.get("reload"):
        time.sleep(spec["reload"]["after"])
        summary["reload"] = one(port, "POST", spec["reload"]["path"])
    for t in threads:
        t.join()
    return summary


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        spec = json.load(f)
    if cmd == "requests":
        out = [one(spec["port"], r["method"], r["path"], r.get("body"), r.get("headers")) for r in spec["requests"]]
    elif cmd == "concurrent":       # all at once: each on a connection of its own, sent past one barrier
        out = [None] * len(spec["requests"])
        barrier = threading.Barrier(len(spec["requests"]))

        def run(i, r):
            conn = http.client.HTTPConnection("127.0.0.1", spec["port"], timeout=30)
            conn.connect()
            barrier.wait()
            conn.request(r["method"], r["path"], body=r.get("body"), headers=r.get("headers") or {})
            resp = conn.getresponse()
            data = resp.read()
            conn.close()
            out[i] = {"status": resp.status, "headers": {k.lower(): v for k, v in resp.getheaders()},
                      "body": data.decode("utf-8", "replace")}
        ts = [threading.Thread(target=run, args=(i, r)) for i, r in enumerate(spec["requests"])]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    else:
        out = load(spec)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
