"""NxD's LayerNorm: torch.nn.LayerNorm that marks its weight and bias sequence_parallel_enabled,
for allreduce_sequence_parallel_gradients to sum their gradients over the tensor-parallel group
(NxD's XLA_DOWNCAST_BF16 cast to float64 is left out: the stand-in runs float32)."""

import torch


class LayerNorm(torch.nn.LayerNorm):
    def __init__(
        self,
        normalized_shape,
        eps=1e-5,
        elementwise_affine=True,
        device=None,
        dtype=None,
        sequence_parallel_enabled=False,
    ):
        super().__init__(normalized_shape, eps, elementwise_affine, device=device, dtype=dtype)
        self.sequence_parallel_enabled = sequence_parallel_enabled
        if self.elementwise_affine:
            self.weight.sequence_parallel_enabled = sequence_parallel_enabled
            self.bias.sequence_parallel_enabled = sequence_parallel_enabled
