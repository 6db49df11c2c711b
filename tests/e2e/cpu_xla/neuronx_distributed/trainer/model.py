"""NxD's NxDModel: the model in a wrapper whose state dict is the model's own."""

import torch


class NxDModel(torch.nn.Module):
    def __init__(self, module, nxd_config):
        super().__init__()
        self.module = module
        self.nxd_config = nxd_config
        self.train()

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def original_module(self):
        return self.module

    def local_modules(self):
        return [self.module]

    def run_train(self, *args, **kwargs):
        loss = self.forward(*args, **kwargs)
        loss.backward()
        return loss

    def named_parameters(self, *args, **kwargs):
        yield from self.module.named_parameters(*args, **kwargs)

    def state_dict(self, *args, **kwargs):
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict=True):
        return self.module.load_state_dict(state_dict, strict=strict)
