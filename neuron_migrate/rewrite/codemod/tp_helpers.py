"""The sources of the helpers NxD tensor parallelism becomes (`transforms/nxd.py`): a DeviceMesh
where NxD's parallel_state was, and NxD's parallel linear layers as full-size nn.Linear modules
sharded by a tensor-parallel plan (parallelize_module). Registered in `helpers.HELPERS`."""

INIT_DEVICE_MESH = '''
def neuron_init_device_mesh(tensor_model_parallel_size=1):
    """NxD's initialize_model_parallel as a DeviceMesh on the neuron device: a "tp" dimension of
    consecutive ranks and a "dp" dimension of one rank of each, as NxD laid the groups out
    (NxD's size larger than the world is the world). neuron_device_mesh() gives it back."""
    from torch.distributed.device_mesh import init_device_mesh

    world = torch.distributed.get_world_size()
    tp = min(tensor_model_parallel_size, world)
    mesh = init_device_mesh("neuron", (world // tp, tp), mesh_dim_names=("dp", "tp"))
    neuron_device_mesh.mesh = mesh
    return mesh
'''

DEVICE_MESH = '''
def neuron_device_mesh():
    """The ("dp", "tp") DeviceMesh neuron_init_device_mesh made, here or in another migrated
    module of the program (NxD's parallel state was one for the process)."""
    mesh = getattr(neuron_device_mesh, "mesh", None)
    if mesh is None:  # a module's own names, not its __getattr__ (lazy modules import there)
        modules = list(sys.modules.values())
        found = (getattr(m, "__dict__", {}).get("neuron_device_mesh") for m in modules)
        mesh = next((f.mesh for f in found if getattr(f, "mesh", None) is not None), None)
        if mesh is None:
            raise RuntimeError(
                "no device mesh: call neuron_init_device_mesh(tensor_model_parallel_size) first"
            )
        neuron_device_mesh.mesh = mesh
    return mesh
'''

NXD_INIT = '''
def neuron_nxd_init(module, init_method):
    """NxD's initialisation with an init_method, in its order: the full weight filled by it,
    then the bias (if any) drawn from nn.Linear's bound. The module is made without its own
    initialisation (torch.nn.utils.skip_init), so the random numbers are NxD's."""
    with torch.no_grad():
        init_method(module.weight)
        bias = getattr(module, "bias", None)
        if bias is not None:
            fan_in = module.weight.shape[1]
            bound = fan_in**-0.5 if fan_in > 0 else 0
            torch.nn.init.uniform_(bias, -bound, bound)
    return module
'''

COLUMN_PARALLEL = '''
def neuron_column_parallel(linear, gather_output=True, init_method=None):
    """NxD's ColumnParallelLinear: `linear`, built at full size, split by output feature over the
    mesh's "tp" dimension (ColwiseParallel). gather_output=True gives every rank the whole
    output, False its own part. An init_method fills the full weight before the split, as NxD
    filled its master weight."""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module

    if init_method is not None:
        neuron_nxd_init(linear, init_method)
    style = ColwiseParallel(output_layouts=Replicate()) if gather_output else ColwiseParallel()
    return parallelize_module(linear, neuron_device_mesh()["tp"], style)
'''

ROW_PARALLEL = '''
def neuron_row_parallel(linear, input_is_parallel=False, init_method=None):
    """NxD's RowParallelLinear: `linear`, built at full size, split by input feature over the
    mesh's "tp" dimension (RowwiseParallel), its output summed over the ranks. An input that is
    not parallel is whole on every rank and split first (input_layouts=Replicate())."""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import RowwiseParallel, parallelize_module

    if init_method is not None:
        neuron_nxd_init(linear, init_method)
    style = RowwiseParallel() if input_is_parallel else RowwiseParallel(input_layouts=Replicate())
    return parallelize_module(linear, neuron_device_mesh()["tp"], style)
'''

REPLICATE_UNSHARDED = '''
def neuron_replicate_unsharded(module):
    """The parameters NxD left whole (a LayerNorm, a plain nn.Linear) as DTensors replicated
    over the mesh's "tp" dimension: optimizers and clip_grad_norm_ take no mix of plain tensors
    and DTensors. Such a submodule takes plain tensors and gives plain tensors as before. One
    whose parameters carry NxD's sequence_parallel_enabled mark (a norm on the rank's part of
    the sequence) gets SequenceParallel, which sums their gradients over the ranks as NxD's
    allreduce_sequence_parallel_gradients did."""
    from torch.distributed.tensor import DTensor, Replicate, distribute_module
    from torch.distributed.tensor.parallel import SequenceParallel, parallelize_module

    def replicated(_module, inputs, mesh):
        return tuple(
            DTensor.from_local(t, mesh, [Replicate()], run_check=False)
            if isinstance(t, torch.Tensor) and not isinstance(t, DTensor)
            else t
            for t in inputs
        )

    def local(_module, outputs, mesh):
        return torch.utils._pytree.tree_map(
            lambda t: t.to_local() if isinstance(t, DTensor) else t, outputs
        )

    mesh = neuron_device_mesh()["tp"]
    for submodule in list(module.modules()):
        own = list(submodule.parameters(recurse=False))
        if own and not any(isinstance(p, DTensor) for p in own):
            if any(getattr(p, "sequence_parallel_enabled", False) for p in own):
                parallelize_module(submodule, mesh, SequenceParallel(sequence_dim=0))
            else:
                distribute_module(submodule, mesh, input_fn=replicated, output_fn=local)
    return module
'''

PARALLEL_EMBEDDING = '''
def neuron_parallel_embedding(embedding, shard_across_embedding=False, init_method=None):
    """NxD's ParallelEmbedding: `embedding`, built at full size, split over the mesh's "tp"
    dimension by vocabulary (RowwiseParallel: each rank looks up the rows it holds and the
    ranks' results are summed) or, shard_across_embedding=True, by feature (ColwiseParallel,
    gathered). Every rank gets the whole output, as from NxD's."""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    if init_method is not None:
        neuron_nxd_init(embedding, init_method)
    if shard_across_embedding:
        style = ColwiseParallel(output_layouts=Replicate())
    else:
        style = RowwiseParallel(input_layouts=Replicate())
    return parallelize_module(embedding, neuron_device_mesh()["tp"], style)
'''

# NxD's region functions (parallel_layers.mappings) as DTensor redistributions over the mesh's
# "tp" dimension: the placement a tensor is declared with, and the one it is redistributed to,
# give NxD's forward collective and its backward one.
COPY_TO_REGION = '''
def neuron_copy_to_tp_region(input_):
    """NxD's copy_to_tensor_model_parallel_region: `input_` as it is, its gradient summed over
    the mesh's "tp" ranks."""
    from torch.distributed.tensor import DTensor, Partial, Replicate

    mesh = neuron_device_mesh()["tp"]
    whole = DTensor.from_local(input_, mesh, [Replicate()], run_check=False)
    return whole.to_local(grad_placements=[Partial()])
'''

REDUCE_FROM_REGION = '''
def neuron_reduce_from_tp_region(input_):
    """NxD's reduce_from_tensor_model_parallel_region: the sum of `input_` over the mesh's "tp"
    ranks, its gradient passed through."""
    from torch.distributed.tensor import DTensor, Partial, Replicate

    mesh = neuron_device_mesh()["tp"]
    partial = DTensor.from_local(input_, mesh, [Partial()], run_check=False)
    return partial.redistribute(mesh, [Replicate()]).to_local()
'''

SCATTER_TO_REGION = '''
def neuron_scatter_to_tp_region(input_):
    """NxD's scatter_to_tensor_model_parallel_region: this rank's part of `input_` split along
    its last dimension over the mesh's "tp" ranks, the parts' gradients gathered."""
    from torch.distributed.tensor import DTensor, Replicate, Shard

    mesh = neuron_device_mesh()["tp"]
    whole = DTensor.from_local(input_, mesh, [Replicate()], run_check=False)
    return whole.redistribute(mesh, [Shard(-1)]).to_local()
'''

GATHER_FROM_REGION = '''
def neuron_gather_from_tp_region(input_):
    """NxD's gather_from_tensor_model_parallel_region: the "tp" ranks' parts of `input_`
    concatenated along the last dimension, the gradient split back."""
    from torch.distributed.tensor import DTensor, Replicate, Shard

    mesh = neuron_device_mesh()["tp"]
    part = DTensor.from_local(input_, mesh, [Shard(-1)], run_check=False)
    return part.redistribute(mesh, [Replicate()]).to_local()
'''
