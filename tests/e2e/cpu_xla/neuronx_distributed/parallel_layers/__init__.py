from neuronx_distributed.parallel_layers import layers, mappings, parallel_state, utils  # noqa: F401
from neuronx_distributed.parallel_layers.layers import (  # noqa: F401
    ColumnParallelLinear,
    ParallelEmbedding,
    RowParallelLinear,
)
from neuronx_distributed.parallel_layers.mappings import (  # noqa: F401
    copy_to_tensor_model_parallel_region,
    gather_from_tensor_model_parallel_region,
    reduce_from_tensor_model_parallel_region,
    scatter_to_tensor_model_parallel_region,
)
from neuronx_distributed.parallel_layers.parallel_state import (  # noqa: F401
    initialize_model_parallel,
)
