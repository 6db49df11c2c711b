"""NxD's gradient reductions (parallel_layers.grads): the data-parallel mean of the gradients
(each divided by the data-parallel size, then summed over the group) and the clipping by the norm
of the full parameters: a tensor-parallel parameter's part counted on each rank, a parameter every
tensor-parallel rank holds whole counted once (its square divided by the size), the sum reduced
over the tensor-parallel group; clipped by max_norm / (norm + 1e-6) where that is below 1. And
allreduce_sequence_parallel_gradients: the gradients of the optimizer's parameters marked
sequence_parallel_enabled (a sequence-parallel norm, a row-parallel bias) summed in place over
the tensor-parallel group, each rank having seen only its part of the sequence."""

import torch
import torch.distributed as dist

from neuronx_distributed.parallel_layers.parallel_state import (
    get_data_parallel_group,
    get_data_parallel_size,
    get_tensor_model_parallel_group,
    get_tensor_model_parallel_size,
)


def bucket_allreduce_gradients(grads_list):
    for grad in grads_list:
        grad.data /= get_data_parallel_size()
        if get_data_parallel_size() > 1:
            dist.all_reduce(grad.data, group=get_data_parallel_group())


def get_grad_norm(parameters, norm_type=2):
    total = torch.zeros(1, dtype=parameters[0].dtype)
    duplicated = torch.zeros(1, dtype=parameters[0].dtype)
    for param in parameters:
        if param.grad is None:
            continue
        part = torch.norm(param.grad.detach(), norm_type) ** norm_type
        if getattr(param, "tensor_model_parallel", False):
            total += part
        else:
            duplicated += part
    total += duplicated / get_tensor_model_parallel_size()
    if get_tensor_model_parallel_size() > 1:
        dist.all_reduce(total, group=get_tensor_model_parallel_group())
    return total ** (1.0 / norm_type)


def clip_grad_norm(
    parameters,
    max_norm,
    norm_type=2,
    zero1_optimizer=False,
    zero1_optimizer_groups=None,
    force_spmd=True,
):
    assert not zero1_optimizer and zero1_optimizer_groups is None, "not in the stand-in"
    parameters = list(parameters)
    total_norm = get_grad_norm(parameters, norm_type)
    clip_coeff = max_norm / (total_norm + 1.0e-6)
    for param in parameters:
        if param.grad is not None:
            param.grad.detach().mul_(torch.where(clip_coeff < 1, clip_coeff, torch.ones(1)))
    return total_norm


def allreduce_sequence_parallel_gradients(optimizer):
    if get_tensor_model_parallel_size() == 1:
        return
    for group in optimizer.param_groups:
        for p in group["params"]:
            marked = isinstance(p, torch.Tensor) and getattr(p, "sequence_parallel_enabled", False)
            if marked and p.grad is not None:
                dist.all_reduce(p.grad.data, group=get_tensor_model_parallel_group())
