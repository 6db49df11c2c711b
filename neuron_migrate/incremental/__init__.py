"""Speed only: content caches, kept reports, the stat index, tree watches and the server.

The plain path (`--no-cache`) never imports this package.
"""
