"""The sources of the helpers NxD's grads module becomes (rules/legacy NM870): gradient clipping
by the norm of the full parameters and the data-parallel mean of a list of gradients, on the
DeviceMesh of `tp_helpers.py`. Registered in `helpers.HELPERS`."""

CLIP_GRAD_NORM = '''
def neuron_clip_grad_norm(parameters, max_norm, norm_type=2, force_spmd=True):
    """NxD's grads.clip_grad_norm: torch.nn.utils.clip_grad_norm_, whose norm over DTensor
    parameters (a tensor-parallel model) is that of the full parameters, as NxD summed the
    parts over the tensor-parallel group; the gradients scaled by max_norm / (norm + 1e-6)
    where that is below 1, as NxD's. The norm comes back as NxD's did: a plain one-element
    tensor, the same on every rank (force_spmd only chose how NxD summed it)."""
    from torch.distributed.tensor import DTensor

    norm = torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type)
    if isinstance(norm, DTensor):
        norm = norm.full_tensor()
    return norm.reshape(1)
'''

BUCKET_ALLREDUCE = '''
def neuron_bucket_allreduce_gradients(grads_list):
    """NxD's grads.bucket_allreduce_gradients: each gradient divided by the data-parallel size
    and summed over the mesh's "dp" dimension, in place: the mean over the data-parallel group.
    A DTensor gradient's local tensor is reduced, its rank's part, which every rank of its "dp"
    group holds alike. NxD's buckets only batched the collectives."""
    from torch.distributed.tensor import DTensor

    dp = neuron_device_mesh()["dp"]
    for grad in grads_list:
        local = grad.to_local() if isinstance(grad, DTensor) else grad
        local.div_(dp.size())
        if dp.size() > 1:
            torch.distributed.all_reduce(local, group=dp.get_group())
'''

# loss_parallel's sharded log-softmax and NLL need the context in the backward pass too, which
# runs later, elsewhere: the autograd function re-enters it there.
PARALLEL_CROSS_ENTROPY_FUNCTION = '''
class NeuronParallelCrossEntropy(torch.autograd.Function):
    """The per-token cross entropy of logits split by vocabulary over the mesh's "tp"
    dimension (this rank's part, the last dimension): F.cross_entropy under loss_parallel() of
    the parts as a Shard(-1) DTensor, forward and backward, without gathering the vocabulary."""

    @staticmethod
    def forward(ctx, vocab_parallel_logits, target):
        from torch.distributed.tensor import DTensor, Shard
        from torch.distributed.tensor.parallel import loss_parallel

        mesh = neuron_device_mesh()["tp"]
        with torch.enable_grad(), loss_parallel():
            part = vocab_parallel_logits.detach().requires_grad_()
            logits = DTensor.from_local(part, mesh, [Shard(part.dim() - 1)], run_check=False)
            loss = torch.nn.functional.cross_entropy(
                logits.flatten(0, -2), target.flatten(), reduction="none"
            ).to_local()
        ctx.part, ctx.loss = part, loss
        return loss.detach().view_as(target)

    @staticmethod
    def backward(ctx, grad):
        from torch.distributed.tensor.parallel import loss_parallel

        with loss_parallel():
            (grad_logits,) = torch.autograd.grad(ctx.loss, ctx.part, grad.reshape(ctx.loss.shape))
        return grad_logits, None
'''

PARALLEL_CROSS_ENTROPY = '''
def neuron_parallel_cross_entropy(vocab_parallel_logits, target, label_smoothing=0.0):
    """NxD's parallel_cross_entropy: the loss of each target (not reduced) from this rank's
    vocabulary part of the logits (a ColumnParallelLinear head's with gather_output=False),
    computed over the mesh's "tp" ranks by loss_parallel(). A target of -100 counts 0, as in
    F.cross_entropy. NxD's label smoothing has no loss_parallel counterpart."""
    if label_smoothing:
        raise NotImplementedError("label smoothing: loss_parallel() does not support it")
    return NeuronParallelCrossEntropy.apply(vocab_parallel_logits, target)
'''

GRAD_NORM = '''
def neuron_grad_norm(parameters, norm_type=2, force_spmd=True):
    """NxD's grads.get_grad_norm: the norm of the parameters' gradients, over DTensor parameters
    (a tensor-parallel model) that of the full parameters, as NxD summed the parts over the
    tensor-parallel group; a plain one-element tensor, the same on every rank, as NxD's."""
    from torch.distributed.tensor import DTensor

    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.nn.utils.get_total_norm(grads, norm_type)
    if isinstance(norm, DTensor):
        norm = norm.full_tensor()
    return norm.reshape(1)
'''
