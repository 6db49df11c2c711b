"""NxD's checkpoints (trainer/checkpoint.py) in its layout: checkpoint_dir/tag/model and /optim
with one torch.save file per tensor-parallel rank (written by the first rank of each
data-parallel group), user_content.pt from rank 0, and a `done` file once every rank has
written, the oldest finished tags beyond num_kept_ckpts removed; without a tag, load_checkpoint
takes the newest finished one. Saves are synchronous (NxD's async_save only changes when)."""

import os
import shutil

import torch
import torch.distributed as dist

from neuronx_distributed.parallel_layers import parallel_state


def _path(prefix):
    tp = parallel_state.get_tensor_model_parallel_rank()
    return f"{prefix}/dp_rank_00_tp_rank_{tp:02d}_pp_rank_00.pt"


def _done_tags(checkpoint_dir):
    if not os.path.isdir(checkpoint_dir):
        return []
    found = [
        (os.path.getmtime(os.path.join(checkpoint_dir, tag, "done")), tag)
        for tag in os.listdir(checkpoint_dir)
        if os.path.isfile(os.path.join(checkpoint_dir, tag, "done"))
    ]
    return [tag for _, tag in sorted(found)]


def has_checkpoint(checkpoint_dir_str):
    return len(_done_tags(checkpoint_dir_str)) > 0


def save_checkpoint(
    checkpoint_dir_str,
    tag,
    model=None,
    optimizer=None,
    scheduler=None,
    user_content=None,
    num_workers=8,
    use_xser=False,
    num_kept_ckpts=None,
    async_save=False,
    zero1_optimizer=False,
):
    assert dist.is_initialized(), "Only support distributed training mode."
    path = os.path.join(checkpoint_dir_str, str(tag))
    for part in ("model", "optim"):
        os.makedirs(os.path.join(path, part), exist_ok=True)
    first_of_dp_group = parallel_state.get_data_parallel_rank() == 0
    if model is not None and first_of_dp_group:
        state = model if isinstance(model, dict) else model.state_dict()
        torch.save(state, os.path.join(path, _path("model")))
    if optimizer is not None and first_of_dp_group:
        state = optimizer if isinstance(optimizer, dict) else optimizer.state_dict()
        torch.save(state, os.path.join(path, _path("optim")))
    if dist.get_rank() == 0:
        if scheduler is not None:
            torch.save(scheduler.state_dict(), os.path.join(path, "scheduler.pt"))
        if user_content is not None:
            torch.save(user_content, os.path.join(path, "user_content.pt"))
    dist.barrier()
    if dist.get_rank() == 0:
        with open(os.path.join(path, "done"), "w") as done:
            done.write("1")
        tags = _done_tags(checkpoint_dir_str)
        if num_kept_ckpts is not None and num_kept_ckpts != -1:
            for old in tags[: max(len(tags) - num_kept_ckpts, 0)]:
                shutil.rmtree(os.path.join(checkpoint_dir_str, old))
    dist.barrier()


def load_checkpoint(
    path, tag=None, model=None, optimizer=None, scheduler=None, num_workers=8, strict=True
):
    assert dist.is_initialized(), "Only support distributed training mode."
    if tag is None:
        tags = _done_tags(path)
        if not tags:
            raise RuntimeError(f"Error: no checkpoint under directory {path}")
        tag = tags[-1]
    where = os.path.join(path, str(tag))
    if model is not None:
        model.load_state_dict(torch.load(os.path.join(where, _path("model"))), strict=strict)
    if optimizer is not None:
        optimizer.load_state_dict(torch.load(os.path.join(where, _path("optim"))))
    if scheduler is not None:
        scheduler.load_state_dict(torch.load(os.path.join(where, "scheduler.pt")))
    user_content = None
    if os.path.isfile(os.path.join(where, "user_content.pt")):
        user_content = torch.load(os.path.join(where, "user_content.pt"), weights_only=False)
    dist.barrier()
    return user_content


def finalize_checkpoint():
    return None
