"""NxD's parallel_cross_entropy: each rank holds a contiguous part of the vocabulary (the last
dimension of the logits); the maximum, the target's logit and the sum of exponentials are
reduced over the tensor-parallel group; the loss of each target comes back unreduced. The
backward is the softmax less one at the target. NxD shifts the given logits in place."""

import torch
import torch.distributed as dist

from neuronx_distributed.parallel_layers.parallel_state import (
    get_tensor_model_parallel_group,
    get_tensor_model_parallel_rank,
)


class _ParallelCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target):
        group = get_tensor_model_parallel_group()
        logits_max = torch.max(logits, dim=-1)[0]
        dist.all_reduce(logits_max, op=dist.ReduceOp.MAX, group=group)
        logits.sub_(logits_max.unsqueeze(-1))
        part = logits.size(-1)
        start = get_tensor_model_parallel_rank() * part
        in_part = (target >= start) & (target < start + part)
        local_target = (target.clone() - start) * in_part.long()
        logits_2d = logits.view(-1, part)
        rows = torch.arange(logits_2d.size(0))
        predicted = logits_2d[rows, local_target.view(-1)].clone().view_as(target)
        predicted = predicted * in_part.float()
        dist.all_reduce(predicted, group=group)
        exp_logits = torch.exp(logits)
        sum_exp = exp_logits.sum(dim=-1)
        dist.all_reduce(sum_exp, group=group)
        loss = torch.log(sum_exp) - predicted
        exp_logits.div_(sum_exp.unsqueeze(-1))
        ctx.save_for_backward(exp_logits, in_part, local_target.view(-1))
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        softmax, in_part, local_target = ctx.saved_tensors
        grad_2d = softmax.view(-1, softmax.size(-1))
        rows = torch.arange(grad_2d.size(0))
        grad_2d[rows, local_target] -= in_part.view(-1).float()
        return softmax.mul_(grad_output.unsqueeze(-1)), None


def parallel_cross_entropy(vocab_parallel_logits, target, label_smoothing=0.0):
    assert label_smoothing == 0.0, "not in the stand-in"
    return _ParallelCrossEntropy.apply(vocab_parallel_logits, target)
