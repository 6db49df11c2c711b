"""NxD's tensor-parallel region functions: which collective runs forward, which backward. The
sequence-parallel ones work along `sequence_dimension` (NxD's default 0, its [sequence, batch,
hidden] layout), with the signatures of NxD's later versions."""

import torch
import torch.distributed as dist

from neuronx_distributed.parallel_layers.parallel_state import (
    get_tensor_model_parallel_group,
    get_tensor_model_parallel_rank,
    get_tensor_model_parallel_size,
)


def _reduce(x):
    if get_tensor_model_parallel_size() == 1:
        return x
    x = x.clone()
    dist.all_reduce(x, group=get_tensor_model_parallel_group())
    return x


def _split_last(x):
    size = get_tensor_model_parallel_size()
    if size == 1:
        return x
    return torch.chunk(x, size, dim=-1)[get_tensor_model_parallel_rank()].contiguous()


def _gather_last(x):
    size = get_tensor_model_parallel_size()
    if size == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(size)]
    dist.all_gather(parts, x.contiguous(), group=get_tensor_model_parallel_group())
    return torch.cat(parts, dim=-1)


class _Copy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return _reduce(grad)


class _Reduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _reduce(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class _Scatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _split_last(x)

    @staticmethod
    def backward(ctx, grad):
        return _gather_last(grad)


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _gather_last(x)

    @staticmethod
    def backward(ctx, grad):
        return _split_last(grad)


def copy_to_tensor_model_parallel_region(x):
    return _Copy.apply(x)


def reduce_from_tensor_model_parallel_region(x):
    return _Reduce.apply(x)


def scatter_to_tensor_model_parallel_region(x):
    return _Scatter.apply(x)


def gather_from_tensor_model_parallel_region(x):
    return _Gather.apply(x)


def _split_along(x, dim):
    size = get_tensor_model_parallel_size()
    if size == 1:
        return x
    assert x.shape[dim] % size == 0, f"{tuple(x.shape)} does not split {size} ways on {dim}"
    return torch.chunk(x, size, dim=dim)[get_tensor_model_parallel_rank()].contiguous()


def _gather_along(x, dim):
    size = get_tensor_model_parallel_size()
    if size == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(size)]
    dist.all_gather(parts, x.contiguous(), group=get_tensor_model_parallel_group())
    return torch.cat(parts, dim=dim)


def _reduce_scatter_along(x, dim):
    size = get_tensor_model_parallel_size()
    if size == 1:
        return x
    parts = [p.contiguous() for p in torch.chunk(x, size, dim=dim)]
    out = torch.empty_like(parts[0])
    dist.reduce_scatter(out, parts, group=get_tensor_model_parallel_group())
    return out


class _ScatterToSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return _split_along(x, dim)

    @staticmethod
    def backward(ctx, grad):
        return _gather_along(grad, ctx.dim), None


class _GatherFromSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, to_model_parallel):
        ctx.dim, ctx.to_model_parallel = dim, to_model_parallel
        return _gather_along(x, dim)

    @staticmethod
    def backward(ctx, grad):
        if ctx.to_model_parallel:
            return _reduce_scatter_along(grad, ctx.dim), None, None
        return _split_along(grad, ctx.dim), None, None


class _ReduceScatterToSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return _reduce_scatter_along(x, dim)

    @staticmethod
    def backward(ctx, grad):
        return _gather_along(grad, ctx.dim), None


def scatter_to_sequence_parallel_region(input_, sequence_dimension=0, process_group=None):
    assert process_group is None, "not in the stand-in"
    return _ScatterToSequence.apply(input_, sequence_dimension)


def gather_from_sequence_parallel_region(
    input_, sequence_dimension=0, to_model_parallel=True, process_group=None, tile_cc=False
):
    assert process_group is None, "not in the stand-in"
    return _GatherFromSequence.apply(input_, sequence_dimension, to_model_parallel)


def reduce_scatter_to_sequence_parallel_region(
    input_, sequence_dimension=0, process_group=None, dtype=None
):
    assert process_group is None and dtype is None, "not in the stand-in"
    return _ReduceScatterToSequence.apply(input_, sequence_dimension)
