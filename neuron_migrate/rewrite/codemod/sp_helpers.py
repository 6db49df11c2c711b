"""The sources of the helpers NxD's sequence parallelism becomes (`transforms/nxd_sp.py`,
`transforms/nxd.py`): the parallel linear layers' `sequence_parallel_enabled`, NxD's LayerNorm
and the sequence-parallel region functions, on the mesh's "tp" dimension. Registered in
`helpers.HELPERS`.

NxD's sequence-parallel activations are this rank's part of the sequence, split along
`sequence_dimension` (0 by default: NxD lays them out [sequence, batch, hidden]). Each helper
takes and gives such local parts, so the code around the layers keeps NxD's shapes; the DTensor
layouts run NxD's collectives: an all-gather before a column-parallel layer (its gradient
reduce-scattered), a reduce-scatter after a row-parallel one (its gradient all-gathered).
"""

COLUMN_PARALLEL_SP = '''
def neuron_column_parallel_sp(
    linear,
    gather_output=True,
    init_method=None,
    sequence_parallel_enabled=False,
    sequence_dimension=None,
):
    """NxD's ColumnParallelLinear with sequence_parallel_enabled (known at run time): when it
    is set, the input is this rank's part of the sequence, gathered along sequence_dimension
    (NxD's default 0) before the product and its gradient reduce-scattered back
    (ColwiseParallel(input_layouts=Shard(dim))); otherwise neuron_column_parallel."""
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module

    if not sequence_parallel_enabled:
        return neuron_column_parallel(linear, gather_output, init_method)
    if gather_output:
        raise ValueError("sequence_parallel_enabled needs gather_output=False, as in NxD")
    if init_method is not None:
        neuron_nxd_init(linear, init_method)
    dim = 0 if sequence_dimension is None else sequence_dimension
    style = ColwiseParallel(input_layouts=Shard(dim))
    return parallelize_module(linear, neuron_device_mesh()["tp"], style)
'''

ROW_PARALLEL_SP = '''
def neuron_row_parallel_sp(
    linear,
    input_is_parallel=False,
    init_method=None,
    sequence_parallel_enabled=False,
    sequence_dimension=None,
):
    """NxD's RowParallelLinear with sequence_parallel_enabled (known at run time): when it is
    set, the ranks' partial outputs are reduce-scattered along sequence_dimension (NxD's
    default 0), each rank keeping its part of the sequence, and the gradient all-gathered
    (RowwiseParallel(output_layouts=Shard(dim))); otherwise neuron_row_parallel. The bias is
    replicated and its gradient summed over the ranks, which NxD left to
    allreduce_sequence_parallel_gradients."""
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import RowwiseParallel, parallelize_module

    if not sequence_parallel_enabled:
        return neuron_row_parallel(linear, input_is_parallel, init_method)
    if not input_is_parallel:
        raise RuntimeError("sequence_parallel_enabled needs input_is_parallel=True, as in NxD")
    if init_method is not None:
        neuron_nxd_init(linear, init_method)
    dim = 0 if sequence_dimension is None else sequence_dimension
    style = RowwiseParallel(output_layouts=Shard(dim))
    return parallelize_module(linear, neuron_device_mesh()["tp"], style)
'''

SEQUENCE_PARALLEL_NORM = '''
def neuron_sequence_parallel_norm(norm, sequence_parallel_enabled=False):
    """NxD's LayerNorm(sequence_parallel_enabled=...): when it is set, the norm works on this
    rank's part of the sequence (NxD's dimension 0) and its parameters are replicated with
    their gradients summed over the mesh's "tp" ranks (SequenceParallel), which NxD left to
    allreduce_sequence_parallel_gradients; otherwise the plain norm, replicated with the module
    that holds it."""
    from torch.distributed.tensor.parallel import SequenceParallel, parallelize_module

    if not sequence_parallel_enabled:
        return norm
    return parallelize_module(norm, neuron_device_mesh()["tp"], SequenceParallel(sequence_dim=0))
'''

SCATTER_TO_SP_REGION = '''
def neuron_scatter_to_sp_region(input_, sequence_dimension=0):
    """NxD's scatter_to_sequence_parallel_region: this rank's part of `input_` split along
    sequence_dimension over the mesh's "tp" ranks, the parts' gradients gathered."""
    from torch.distributed.tensor import DTensor, Replicate, Shard

    mesh = neuron_device_mesh()["tp"]
    whole = DTensor.from_local(input_, mesh, [Replicate()], run_check=False)
    return whole.redistribute(mesh, [Shard(sequence_dimension)]).to_local()
'''

GATHER_FROM_SP_REGION = '''
def neuron_gather_from_sp_region(input_, sequence_dimension=0, to_model_parallel=True):
    """NxD's gather_from_sequence_parallel_region: the "tp" ranks' parts of the sequence
    concatenated along sequence_dimension; the gradient reduce-scattered back
    (to_model_parallel=True: each rank's gradient is a partial sum) or split (False)."""
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    if isinstance(sequence_dimension, bool):  # NxD before sequence_dimension took this place
        raise TypeError("pass to_model_parallel by keyword: the second argument is the dimension")
    mesh = neuron_device_mesh()["tp"]
    part = DTensor.from_local(input_, mesh, [Shard(sequence_dimension)], run_check=False)
    grad = Partial() if to_model_parallel else Replicate()
    return part.redistribute(mesh, [Replicate()]).to_local(grad_placements=[grad])
'''

REDUCE_SCATTER_TO_SP_REGION = '''
def neuron_reduce_scatter_to_sp_region(input_, sequence_dimension=0):
    """NxD's reduce_scatter_to_sequence_parallel_region: the sum of `input_` over the mesh's
    "tp" ranks, each rank keeping its part along sequence_dimension; the gradient gathered."""
    from torch.distributed.tensor import DTensor, Partial, Shard

    mesh = neuron_device_mesh()["tp"]
    partial = DTensor.from_local(input_, mesh, [Partial()], run_check=False)
    return partial.redistribute(mesh, [Shard(sequence_dimension)]).to_local()
'''

STRIDED_COLUMN_PARALLEL = '''
class NeuronStridedColumnParallel(torch.nn.Module):
    """NxD's ColumnParallelLinear with a stride (fused weights: gate and up, or query, key and
    value): NxD split the full weight into `stride` blocks of rows and gave each rank its part
    of every block, side by side. Here each block is a full-size nn.Linear split by output
    feature as neuron_column_parallel_sp splits one, and the rank's outputs are concatenated in
    NxD's order. The full weight is filled first (an init_method, or nn.Linear's), so the
    random numbers are NxD's."""

    def __init__(
        self,
        linear,
        stride,
        gather_output=True,
        init_method=None,
        sequence_parallel_enabled=False,
        sequence_dimension=None,
    ):
        super().__init__()
        if gather_output:
            raise ValueError("a strided layer's gathered output is in NxD's strided order")
        if init_method is not None:
            neuron_nxd_init(linear, init_method)
        rows = linear.out_features // stride
        blocks = []
        for k in range(stride):
            block = torch.nn.utils.skip_init(
                torch.nn.Linear,
                linear.in_features,
                rows,
                bias=linear.bias is not None,
                dtype=linear.weight.dtype,
                device=linear.weight.device,
            )
            with torch.no_grad():
                block.weight.copy_(linear.weight[k * rows : (k + 1) * rows])
                if linear.bias is not None:
                    block.bias.copy_(linear.bias[k * rows : (k + 1) * rows])
            blocks.append(
                neuron_column_parallel_sp(
                    block, False, None, sequence_parallel_enabled, sequence_dimension
                )
            )
        self.blocks = torch.nn.ModuleList(blocks)

    def forward(self, input):
        return torch.cat([block(input) for block in self.blocks], dim=-1)
'''
