"""``python -m companion.tools.present serve|site``: what ``make present`` and ``make site`` run."""
from __future__ import annotations

import argparse
import sys

from .serve import DEFAULT_PORT, serve_course
from .site import build_site


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion.tools.present")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="every notebook behind one landing page (Voila)")
    serve.add_argument("--notebooks", default="notebooks")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    serve.add_argument("--preheat", default="all",
                       help="notebooks run at start, before anyone opens them: 'all', "
                            "'' (none) or numbers such as '07 08'")
    serve.add_argument("--no-browser", action="store_true")
    site = sub.add_parser("site", help="static HTML of every executed notebook")
    site.add_argument("--notebooks", default="notebooks")
    site.add_argument("--out", default="build/site")
    site.add_argument("--only", default=None, help="numbers such as '00 11' (default: all)")
    args = parser.parse_args(argv)
    try:
        if args.command == "serve":
            return serve_course(args.notebooks, args.port, args.preheat,
                                open_browser=not args.no_browser)
        index = build_site(args.out, args.notebooks, args.only)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"site written: {index} (open it in a browser; it needs no server)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
