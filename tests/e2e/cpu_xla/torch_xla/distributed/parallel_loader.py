"""Loaders that hand batches over unchanged (the device is the CPU)."""


class MpDeviceLoader:
    def __init__(self, loader, device, **options):
        self.loader = loader

    def __iter__(self):
        return iter(self.loader)

    def __len__(self):
        return len(self.loader)


class ParallelLoader:
    def __init__(self, loader, devices, **options):
        self.loader = loader

    def per_device_loader(self, device):
        return MpDeviceLoader(self.loader, device)
