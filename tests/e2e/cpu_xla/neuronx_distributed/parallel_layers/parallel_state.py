"""Model-parallel groups as NxD lays them out: a tensor-parallel group is a run of consecutive
ranks, a data-parallel group takes one rank of each."""

import torch.distributed as dist

_TP_GROUP = None
_DP_GROUP = None
_TP_SIZE = None


def initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1):
    global _TP_GROUP, _DP_GROUP, _TP_SIZE
    assert pipeline_model_parallel_size == 1, "the stand-in has no pipeline parallelism"
    world = dist.get_world_size()
    tp = tensor_model_parallel_size
    assert world % tp == 0, f"world size {world} is not divisible by {tp}"
    rank = dist.get_rank()
    for start in range(0, world, tp):
        ranks = list(range(start, start + tp))
        group = dist.new_group(ranks)
        if rank in ranks:
            _TP_GROUP = group
    for offset in range(tp):
        ranks = list(range(offset, world, tp))
        group = dist.new_group(ranks)
        if rank in ranks:
            _DP_GROUP = group
    _TP_SIZE = tp


def model_parallel_is_initialized():
    return _TP_GROUP is not None


def destroy_model_parallel():
    global _TP_GROUP, _DP_GROUP, _TP_SIZE
    _TP_GROUP = _DP_GROUP = _TP_SIZE = None


def get_tensor_model_parallel_group(as_list=False):
    return _TP_GROUP


def get_tensor_model_parallel_size():
    return _TP_SIZE


def get_tensor_model_parallel_rank():
    return dist.get_rank(group=_TP_GROUP)


def get_data_parallel_group(as_list=False):
    return _DP_GROUP


def get_data_parallel_size():
    return dist.get_world_size(group=_DP_GROUP)


def get_data_parallel_rank():
    return dist.get_rank(group=_DP_GROUP)
