from neuronx_distributed.trainer.checkpoint import (  # noqa: F401
    finalize_checkpoint,
    has_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from neuronx_distributed.trainer.trainer import (  # noqa: F401
    initialize_parallel_model,
    initialize_parallel_optimizer,
    neuronx_distributed_config,
)
