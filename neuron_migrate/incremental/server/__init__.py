"""A long-lived process that runs `scan` and `rewrite` for the command line.

A re-scan that the cache answers spends most of its time starting Python and importing the
tool. `neuron-migrate server start` keeps one process with the modules and the bundled data
loaded; while it runs, each `neuron-migrate scan` or `rewrite` hands its command line, working
folder, environment and standard streams to it and exits with the code it sends back. The
server forks a child per command, so every command runs in a fresh copy of the loaded process:
nothing one command does (its folder, environment, caches) is seen by the next.
"""
