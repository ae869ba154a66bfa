"""Serves a folder on 127.0.0.1: `/NAME` with Content-Length, `/chunked/NAME`
with chunked transfer encoding and no declared length (what a streaming page
looks like to a fetcher: only the stream can tell how large it is)."""
import http.server
import os
import sys

root, port = sys.argv[1], int(sys.argv[2])


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        chunked = self.path.startswith("/chunked/")
        name = os.path.basename(self.path)
        try:
            data = open(os.path.join(root, name), "rb").read()
        except OSError:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(data), 65536):
                piece = data[i:i + 65536]
                try:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                except (BrokenPipeError, ConnectionResetError):
                    return  # the fetcher stopped reading at its cap
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
