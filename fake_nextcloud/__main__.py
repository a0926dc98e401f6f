"""``python -m fake_nextcloud``: run the fake for a demo or manual testing until Ctrl-C.

    python -m fake_nextcloud --port 8080 --seed demo \
        --exapp-id semantic_mcp --exapp-url http://127.0.0.1:23000 --exapp-secret s3cret
"""

from __future__ import annotations

import argparse
import json
import threading

from .seed import seed
from .server import FakeNextcloud

DEFAULT_ROUTES = json.dumps([{"url": "^mcp$", "verb": "GET,POST,DELETE", "access_level": 1, "headers_to_exclude": []}])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fake_nextcloud", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--seed", choices=["demo", "minimal", "none"], default="demo")
    parser.add_argument("--webhook-delay", type=float, default=0.05, help="seconds before a webhook is delivered")
    parser.add_argument("--old-deck", action="store_true", help="Deck before 1.18: no card events (poll)")
    parser.add_argument("--exapp-id", help="register this ExApp after start (needs --exapp-url and --exapp-secret)")
    parser.add_argument("--exapp-url", help="where the ExApp listens, e.g. http://127.0.0.1:23000")
    parser.add_argument("--exapp-secret")
    parser.add_argument("--exapp-version", default="1.0.0")
    parser.add_argument("--exapp-host", help="Host header the proxy sends (default nc_app_<id>:<port>)")
    parser.add_argument("--routes", default=DEFAULT_ROUTES, help="JSON list of AppAPI routes")
    parser.add_argument("--proxy-mode", choices=["buffered", "streaming"], default="buffered")
    args = parser.parse_args(argv)

    fake = FakeNextcloud(
        args.host, args.port, webhook_delay=args.webhook_delay, deck_webhooks_supported=not args.old_deck
    )
    url = fake.start()
    try:
        if args.seed != "none":
            seed(fake, args.seed)
        print(f"Fake Nextcloud at {url}")
        for uid, user in fake.state.users.items():
            print(f"  {uid:6} app password: {user.password}{'  (admin)' if user.admin else ''}")
        if args.exapp_id:
            if not (args.exapp_url and args.exapp_secret):
                parser.error("--exapp-id needs --exapp-url and --exapp-secret")
            fake.register_exapp(
                args.exapp_id,
                args.exapp_url,
                args.exapp_secret,
                args.exapp_version,
                json.loads(args.routes),
                args.exapp_host,
                args.proxy_mode,
            )
            print(f"ExApp {args.exapp_id} enabled; proxy: {fake.proxy_url(args.exapp_id)}")
        print("Ctrl-C to stop.", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
