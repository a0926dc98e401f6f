"""A fake Nextcloud 32 for tests and demos: a real HTTP server that answers as the recorded one.

from fake_nextcloud import FakeNextcloud, seed

with FakeNextcloud() as nc:
    seed(nc, "demo")
    nc.register_exapp("semantic_mcp", "http://127.0.0.1:23000", "secret", routes=[...])
"""

from .appapi import ExAppError
from .seed import seed
from .server import FakeNextcloud

__all__ = ["ExAppError", "FakeNextcloud", "seed"]
