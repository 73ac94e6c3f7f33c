# A webhook receiver for the e2e tests (started by lib.sh's start_webhook_receiver): appends one
# JSON line per accepted POST ({"path", "content_type", "body"}) to WORK/hooks.jsonl, answers the
# first FAIL_FIRST POSTs with 503 (their bodies in WORK/hook-503) so that retries are exercised,
# and writes the port it listens on to WORK/hook-port once it is ready.
import http.server, json, os, sys

work = sys.argv[1]
fail_first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
seen = 0


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global seen
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        seen += 1
        status = 503 if seen <= fail_first else 200
        if status == 200:
            with open(os.path.join(work, "hooks.jsonl"), "a") as f:
                f.write(json.dumps({"path": self.path,
                                    "content_type": self.headers.get("Content-Type"),
                                    "body": json.loads(body)}) + "\n")
        else:
            with open(os.path.join(work, "hook-503"), "w") as f:
                f.write(body.decode())
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
with open(os.path.join(work, "hook-port.tmp"), "w") as f:
    f.write(str(server.server_port))
os.rename(os.path.join(work, "hook-port.tmp"), os.path.join(work, "hook-port"))
server.serve_forever()
