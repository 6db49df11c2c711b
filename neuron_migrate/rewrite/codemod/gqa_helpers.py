"""The source of the helper NxD's GQA QKV layer becomes (rules/legacy NM863): three full-size
nn.Linear projections split by a tensor-parallel plan, as the column-parallel helpers split one
(`sp_helpers.py`). Registered in `helpers.HELPERS`."""

QKV_LINEAR = '''
class NeuronQKVLinear(torch.nn.Module):
    """NxD's GQAQKVColumnParallelLinear: the query, key and value projections of one input as
    three full-size nn.Linear layers (q, k, v), each split by output feature over the mesh's
    "tp" dimension as neuron_column_parallel_sp splits a ColumnParallelLinear (with
    sequence_parallel_enabled, the input is the rank's part of the sequence, gathered once per
    projection); called, it gives (q, k, v). NxD drew the three full weights (init_method, or
    nn.Linear's), then the three biases (nn.Linear's bound); so does this. fuse_qkv changed only
    how NxD stored the weights (one tensor a rank), not the math. Key and value heads repeated
    over the ranks (kv_size_multiplier other than 1) have no plan equivalent: that raises."""

    def __init__(
        self,
        input_size,
        output_sizes,
        bias=True,
        gather_output=True,
        dtype=torch.float32,
        device=None,
        init_method=None,
        sequence_parallel_enabled=False,
        kv_size_multiplier=1,
        fuse_qkv=False,
    ):
        from math import sqrt

        super().__init__()
        if kv_size_multiplier != 1:
            raise NotImplementedError(
                "kv_size_multiplier: key and value heads repeated over the tensor-parallel ranks "
                "have no DTensor plan equivalent"
            )
        sizes = {"q": output_sizes[0], "k": output_sizes[1], "v": output_sizes[1]}
        where = {} if device is None else {"device": device}  # skip_init's default: the CPU
        layers = {
            name: torch.nn.utils.skip_init(
                torch.nn.Linear, input_size, size, bias=bias, dtype=dtype, **where
            )
            for name, size in sizes.items()
        }
        with torch.no_grad():  # NxD's order: the three weights, then the three biases
            for layer in layers.values():
                if init_method is None:
                    torch.nn.init.kaiming_uniform_(layer.weight, a=sqrt(5))
                else:
                    init_method(layer.weight)
            for layer in layers.values():
                if layer.bias is not None:
                    bound = 1 / sqrt(input_size)
                    torch.nn.init.uniform_(layer.bias, -bound, bound)
        for name, layer in layers.items():
            parallel = neuron_column_parallel_sp(
                layer, gather_output, None, sequence_parallel_enabled
            )
            setattr(self, name, parallel)

    def forward(self, input):
        return self.q(input), self.k(input), self.v(input)
'''
