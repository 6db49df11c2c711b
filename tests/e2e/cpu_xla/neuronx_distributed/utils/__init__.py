from neuronx_distributed.utils import logger  # noqa: F401
