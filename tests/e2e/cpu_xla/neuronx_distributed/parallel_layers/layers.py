"""NxD's column- and row-parallel linear layers and its parallel embedding, initialised on the
CPU as NxD does: one master weight of the full size (kaiming_uniform_(a=sqrt(5)) for a linear
layer unless an init_method is given, normal_ for an embedding), split along the partition
dimension, this rank keeping its part; the biases as NxD initialises them. With
sequence_parallel_enabled the column-parallel input is this rank's part of the sequence,
all-gathered along sequence_dimension (0 unless given) before the product and its gradient
reduce-scattered, and the row-parallel output is reduce-scattered back to such a part, its bias
marked sequence_parallel_enabled for allreduce_sequence_parallel_gradients."""

import math

import torch
import torch.nn.functional as F
from torch.nn import Parameter

from neuronx_distributed.parallel_layers.mappings import (
    copy_to_tensor_model_parallel_region,
    gather_from_sequence_parallel_region,
    gather_from_tensor_model_parallel_region,
    reduce_from_tensor_model_parallel_region,
    reduce_scatter_to_sequence_parallel_region,
    scatter_to_tensor_model_parallel_region,
)
from neuronx_distributed.parallel_layers.parallel_state import (
    get_tensor_model_parallel_rank,
    get_tensor_model_parallel_size,
)
from neuronx_distributed.parallel_layers.utils import divide


def _master_part(shape, per_partition, dim, init, dtype, stride=1):
    """This rank's part of a master weight filled at full size: with a stride, the master split
    in `per_partition // stride` chunks and the rank's every world-size-th chunk concatenated."""
    master = torch.empty(shape, dtype=dtype)
    init(master)
    chunks = torch.split(master, divide(per_partition, stride), dim=dim)
    mine = chunks[get_tensor_model_parallel_rank() :: get_tensor_model_parallel_size()]
    return torch.cat(mine, dim=dim).clone()


def _tp_weight(part, dim, stride=1):
    """`part` as a Parameter marked tensor_model_parallel, as NxD's _initialize_parameter_cpu
    marks a weight it splits (grads.clip_grad_norm counts such a part on every rank)."""
    weight = Parameter(part)
    weight.tensor_model_parallel, weight.partition_dim, weight.partition_stride = True, dim, stride
    return weight


class _Parallel(torch.nn.Module):
    def _init_weight(self, weight):
        if self.arg_init_method is None:
            torch.nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
        else:
            self.arg_init_method(weight)

    def _init_bias(self, fan_in):
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        torch.nn.init.uniform_(self.bias, -bound, bound)


class ColumnParallelLinear(_Parallel):
    def __init__(
        self,
        input_size,
        output_size,
        bias=True,
        gather_output=True,
        dtype=torch.float32,
        device=None,
        stride=1,
        init_method=None,
        sequence_parallel_enabled=False,
        sequence_dimension=None,
    ):
        super().__init__()
        self.input_size, self.output_size = input_size, output_size
        self.gather_output = gather_output
        self.sequence_parallel_enabled = sequence_parallel_enabled
        self.sequence_dimension = 0 if sequence_dimension is None else sequence_dimension
        self.arg_init_method = init_method
        per_partition = divide(output_size, get_tensor_model_parallel_size())
        self.weight = _tp_weight(
            _master_part(
                (output_size, input_size), per_partition, 0, self._init_weight, dtype, stride
            ),
            0,
            stride,
        )
        if bias:
            self.bias = Parameter(
                torch.empty(output_size if gather_output else per_partition, dtype=dtype)
            )
            self._init_bias(input_size)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        if self.sequence_parallel_enabled:
            input = gather_from_sequence_parallel_region(input, self.sequence_dimension)
        else:
            input = copy_to_tensor_model_parallel_region(input)
        output = F.linear(input, self.weight)
        if self.gather_output:
            assert not self.sequence_parallel_enabled
            output = gather_from_tensor_model_parallel_region(output)
        return output + self.bias if self.bias is not None else output


class RowParallelLinear(_Parallel):
    def __init__(
        self,
        input_size,
        output_size,
        bias=True,
        input_is_parallel=False,
        dtype=torch.float32,
        device=None,
        stride=1,
        init_method=None,
        sequence_parallel_enabled=False,
        sequence_dimension=None,
    ):
        super().__init__()
        self.input_size, self.output_size = input_size, output_size
        self.input_is_parallel = input_is_parallel
        if sequence_parallel_enabled and not input_is_parallel:
            raise RuntimeError("sequence_parallel_enabled needs input_is_parallel=True")
        self.sequence_parallel_enabled = sequence_parallel_enabled
        self.sequence_dimension = 0 if sequence_dimension is None else sequence_dimension
        self.arg_init_method = init_method
        per_partition = divide(input_size, get_tensor_model_parallel_size())
        self.weight = _tp_weight(
            _master_part((output_size, input_size), per_partition, 1, self._init_weight, dtype), 1
        )
        if bias:
            self.bias = Parameter(torch.empty(output_size, dtype=dtype))
            self._init_bias(per_partition)  # NxD: the bound from the per-rank fan-in
            self.bias.sequence_parallel_enabled = sequence_parallel_enabled
        else:
            self.register_parameter("bias", None)

    def forward(self, input_):
        if not self.input_is_parallel:
            input_ = scatter_to_tensor_model_parallel_region(input_)
        output = F.linear(input_, self.weight)
        if self.sequence_parallel_enabled:
            output = reduce_scatter_to_sequence_parallel_region(output, self.sequence_dimension)
        else:
            output = reduce_from_tensor_model_parallel_region(output)
        return output + self.bias if self.bias is not None else output


class ParallelEmbedding(torch.nn.Module):
    """Split by vocabulary (each rank looks up the rows it holds, zeroes the others and the ranks'
    results are summed) or, shard_across_embedding=True, by embedding feature (gathered)."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
        init_method=torch.nn.init.normal_,
        device=None,
        dtype=torch.float32,
        shard_across_embedding=False,
        pad=False,
    ):
        super().__init__()
        assert padding_idx is None and max_norm is None and not pad, "not in the stand-in"
        self.shard_across_embedding = shard_across_embedding
        size = get_tensor_model_parallel_size()
        dim = 1 if shard_across_embedding else 0
        full = (num_embeddings, embedding_dim)
        per_partition = divide(full[dim], size)
        self.start_index = get_tensor_model_parallel_rank() * per_partition
        self.end_index = self.start_index + per_partition
        self.weight = _tp_weight(_master_part(full, per_partition, dim, init_method, dtype), dim)

    def forward(self, input_):
        if self.shard_across_embedding:
            output = F.embedding(input_.long(), self.weight)
            return gather_from_tensor_model_parallel_region(output)
        if get_tensor_model_parallel_size() == 1:
            return reduce_from_tensor_model_parallel_region(F.embedding(input_, self.weight))
        mask = (input_ >= self.start_index) & (input_ < self.end_index)
        local = (input_.clone() - self.start_index) * mask.long()
        output = F.embedding(local.long(), self.weight) * mask.unsqueeze(-1).float()
        return reduce_from_tensor_model_parallel_region(output)
