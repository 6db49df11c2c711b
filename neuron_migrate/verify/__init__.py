"""Running code on the simulated device, and reconciling what ran with the static report."""
