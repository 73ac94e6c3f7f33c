#!/usr/bin/env python3
"""A stand-in for the Kubernetes API server's list and watch, for tests/e2e/kubernetes_test.sh.

Usage: fake_kube_api.py OBJECTS.json PORT-FILE

OBJECTS.json maps each path gpufleet lists ("/api/v1/pods", "/apis/apps/v1/replicasets",
"/apis/batch/v1/jobs") to its items, as the API server writes them. A list (GET PATH?limit=N)
answers them all at resourceVersion "1"; a watch (GET PATH?watch=1...) answers 200 with a chunked
application/json stream that sends nothing more (nothing changes) until the client goes away.
A DELETE or PATCH (the idle reaper's stop of a pod, kube/kube_pod_stop.h) is answered 200 and
written to stderr as "STOP METHOD PATH CONTENT-TYPE BODY", where the test reads it.
Plain HTTP on 127.0.0.1 at a free port, written to PORT-FILE once listening. Each request is
logged on stderr.
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    objects = {}

    def do_GET(self):  # noqa: N802 (the standard library's name)
        path, _, query = self.path.partition("?")
        if path not in self.objects:
            self.send_error(404, "no such resource: " + path)
            return
        if "watch=1" in query.split("&"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                while True:  # nothing changes; the client ends the watch by closing
                    self.wfile.flush()
                    time.sleep(0.5)
                    if self.rfile.peek(1) == b"":
                        return
            except (BrokenPipeError, ConnectionResetError, ValueError):
                return
        body = json.dumps({"kind": "List", "metadata": {"resourceVersion": "1"},
                           "items": self.objects[path]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def stop(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        sys.stderr.write("STOP %s %s %s %s\n" % (self.command, self.path,
                                                 self.headers.get("Content-Type", ""), body))
        sys.stderr.flush()
        answer = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Success"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_DELETE = stop  # noqa: N815 (the standard library's names)
    do_PATCH = stop  # noqa: N815


def main():
    with open(sys.argv[1]) as f:
        Handler.objects = json.load(f)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
