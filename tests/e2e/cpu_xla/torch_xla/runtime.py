"""Ranks from the launcher's environment."""

import os


def world_size():
    return int(os.environ.get("WORLD_SIZE", 1))


def global_ordinal():
    return int(os.environ.get("RANK", 0))


def local_ordinal():
    return int(os.environ.get("LOCAL_RANK", 0))


def device_type():
    """The reference is the program on a machine with Neuron devices."""
    return "NEURON"
