"""`python -m neuron_migrate.incremental.server [--idle-timeout S]`: the detached server."""

from __future__ import annotations

import argparse
import sys

from neuron_migrate.incremental.server.zygote import DEFAULT_IDLE_TIMEOUT_S, AlreadyRunning, serve


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m neuron_migrate.incremental.server")
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S)
    args = parser.parse_args()
    try:
        serve(args.idle_timeout)
    except (AlreadyRunning, OSError) as exc:
        print(f"neuron-migrate server: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
