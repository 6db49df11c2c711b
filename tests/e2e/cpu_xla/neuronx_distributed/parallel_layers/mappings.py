"""NxD's tensor-parallel region functions: which collective runs forward, which backward."""

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
