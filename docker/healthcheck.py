"""Docker HEALTHCHECK: the app's /heartbeat answers 200, on the unix socket behind HaRP, else on APP_PORT."""

import http.client
import os
import socket
import sys


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=5)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(self.path)


def main() -> int:
    if os.environ.get("HP_SHARED_KEY"):
        connection = UnixHTTPConnection(os.environ.get("HP_EXAPP_SOCK", "/tmp/exapp.sock"))
    else:
        host = os.environ.get("APP_HOST", "127.0.0.1")
        connection = http.client.HTTPConnection("127.0.0.1" if host in ("0.0.0.0", "") else host,
                                                int(os.environ["APP_PORT"]), timeout=5)
    try:
        connection.request("GET", "/heartbeat")
        return 0 if connection.getresponse().status == 200 else 1
    except OSError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
