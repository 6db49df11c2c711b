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
