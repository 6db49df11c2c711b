def print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    print("| Training", f"Device={device}", f"Step={step}", f"Loss={loss:.5f}", flush=True)


def print_test_update(device, accuracy, epoch=None, step=None):
    print("| Test", f"Device={device}", f"Accuracy={accuracy:.2f}", flush=True)
