"""NxD's logger: the named standard logger, to stdout, at the level NXD_LOG_LEVEL names."""

import logging
import os
import sys


def get_logger(name="neuronx_distributed"):
    logger = logging.getLogger(name)
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler(sys.stdout))
        level = os.environ.get("NXD_LOG_LEVEL", "info").upper()
        logger.setLevel(getattr(logging, level, logging.INFO))
        logger.propagate = False
    return logger
