"""A FastMCP proxy in front of server-everything over stdio, served over
Streamable HTTP on a loopback port: one of the gateways bench/gateway.mjs compares.

    python fastmcp_proxy.py PORT COMMAND [ARGS...]

Prints `fastmcp-proxy: ready` on stderr once the backend answers, then serves
http://127.0.0.1:PORT/mcp until killed. Run with FASTMCP_CHECK_FOR_UPDATES=off
(the script sets it too) so it never looks for a newer release.
"""

import os
import sys

os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")

from fastmcp.client.transports import StdioTransport  # noqa: E402
from fastmcp.server import create_proxy  # noqa: E402


def main() -> None:
    port = int(sys.argv[1])
    command, args = sys.argv[2], sys.argv[3:]
    backend = StdioTransport(command=command, args=args, keep_alive=True)
    proxy = create_proxy(backend, name="bench-fastmcp-proxy")
    print(f"fastmcp-proxy: serving http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    proxy.run(transport="http", host="127.0.0.1", port=port, show_banner=False, log_level="warning")


if __name__ == "__main__":
    main()
