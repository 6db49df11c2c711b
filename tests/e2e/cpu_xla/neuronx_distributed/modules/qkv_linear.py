"""NxD's GQAQKVColumnParallelLinear with kv_size_multiplier=1: three column-parallel projections
(q, k, v) of one input, their master weights drawn at full size in that order and split, then
the biases from the full output sizes copied in (which, as in NxD, fails for a split bias);
with sequence_parallel_enabled the input is the rank's part of the sequence, gathered once."""

import math

import torch
import torch.nn.functional as F
from torch.nn import Parameter

from neuronx_distributed.parallel_layers.layers import _master_part
from neuronx_distributed.parallel_layers.mappings import (
    copy_to_tensor_model_parallel_region,
    gather_from_sequence_parallel_region,
    gather_from_tensor_model_parallel_region,
)
from neuronx_distributed.parallel_layers.parallel_state import get_tensor_model_parallel_size
from neuronx_distributed.parallel_layers.utils import divide


class GQAQKVColumnParallelLinear(torch.nn.Module):
    def __init__(
        self,
        input_size,
        output_sizes,
        bias=True,
        gather_output=True,
        dtype=torch.float32,
        device=None,
        init_method=None,
        sequence_parallel_enabled=False,
        keep_master_weight=False,
        kv_size_multiplier=1,
        fuse_qkv=False,
    ):
        super().__init__()
        assert kv_size_multiplier == 1 and not fuse_qkv, "not in the stand-in"
        self.gather_output = gather_output
        self.sequence_parallel_enabled = sequence_parallel_enabled
        world = get_tensor_model_parallel_size()
        sizes = {"q": output_sizes[0], "k": output_sizes[1], "v": output_sizes[1]}

        def init(weight):
            if init_method is None:
                torch.nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
            else:
                init_method(weight)

        for name, size in sizes.items():
            part = _master_part((size, input_size), divide(size, world), 0, init, dtype)
            setattr(self, f"weight_{name}", Parameter(part))
        for name, size in sizes.items():
            if not bias:
                self.register_parameter(f"bias_{name}", None)
                continue
            local = size if gather_output else divide(size, world)
            param = Parameter(torch.empty(local, dtype=dtype))
            master = torch.empty(size, dtype=dtype)
            bound = 1 / math.sqrt(input_size)
            torch.nn.init.uniform_(master, -bound, bound)
            param.data.copy_(master)
            setattr(self, f"bias_{name}", param)

    def forward(self, input):
        if self.sequence_parallel_enabled:
            input = gather_from_sequence_parallel_region(input, 0)
        else:
            input = copy_to_tensor_model_parallel_region(input)
        outputs = []
        for name in "qkv":
            output = F.linear(input, getattr(self, f"weight_{name}"))
            if self.gather_output:
                assert not self.sequence_parallel_enabled
                output = gather_from_tensor_model_parallel_region(output)
            output_bias = getattr(self, f"bias_{name}")
            outputs.append(output if output_bias is None else output + output_bias)
        return tuple(outputs)
