"""The sources of the helpers NxD's small utilities become (rules/legacy NM871, NM872): its
rank-prefixed log message and its head-padding arithmetic, which need no NxD. Registered in
`helpers.HELPERS`."""

RANK_MESSAGE = '''
def neuron_rmsg(msg):
    """NxD's parallel_state.rmsg: `msg` prefixed with this process's global rank and its
    pipeline, tensor- and data-parallel ranks ([rank_0_pp0_tp1_dp0] ...): the mesh's, with no
    pipeline stages (pipeline rank 0); -1 for each before a mesh is made, and global rank 0
    without a process group, as NxD printed them."""
    try:
        mesh = neuron_device_mesh()
        pp, tp, dp = 0, mesh["tp"].get_local_rank(), mesh["dp"].get_local_rank()
    except RuntimeError:
        pp, tp, dp = -1, -1, -1
    initialized = torch.distributed.is_available() and torch.distributed.is_initialized()
    rank = torch.distributed.get_rank() if initialized else 0
    return f"[rank_{rank}_pp{pp}_tp{tp}_dp{dp}] {msg}"
'''

EXTRA_HEADS = '''
def neuron_number_of_extra_heads(n_head, tp_degree):
    """NxD's pad.get_number_of_extra_heads: the heads to add so that `tp_degree` divides them
    (0 where it already does)."""
    if n_head % tp_degree == 0:
        return 0
    return tp_degree - n_head % tp_degree
'''
