"""NxD's NxDOptimizer: step() averages the gradients over the data-parallel group, clips them by
the full parameters' norm where the config clips (kept as grad_norm), then steps."""

import torch

from neuronx_distributed.parallel_layers import grads


class NxDOptimizer(torch.optim.Optimizer):
    def __init__(self, optimizer, nxd_config):
        self.optimizer = optimizer
        self.nxd_config = nxd_config
        self._grad_norm = None
        self.params = [p for group in self.param_groups for p in group["params"]]

    @property
    def grad_norm(self):
        return self._grad_norm

    @property
    def state(self):
        return self.optimizer.state

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def defaults(self):
        return self.optimizer.defaults

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self.optimizer.load_state_dict(state_dict)

    def zero_grad(self, set_to_none=False):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None):
        config = self.nxd_config["optimizer_config"]
        grads.bucket_allreduce_gradients([p.grad.data for p in self.params if p.grad is not None])
        if config["grad_clipping"]:
            self._grad_norm = grads.clip_grad_norm(self.params, config["max_grad_norm"])
        return self.optimizer.step(closure=closure)
