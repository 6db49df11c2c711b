import time


def print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    print("| Training", f"Device={device}", f"Step={step}", f"Loss={loss:.5f}", flush=True)


def print_test_update(device, accuracy, epoch=None, step=None):
    print("| Test", f"Device={device}", f"Accuracy={accuracy:.2f}", flush=True)


def now(format="%H:%M:%S"):
    return time.strftime(format)


def get_summary_writer(logdir):
    if logdir:
        raise NotImplementedError("the e2e programs run without a log directory")
    return None


def write_to_summary(summary_writer, global_step=None, dict_to_write=None, write_xla_metrics=False):
    if summary_writer is not None:
        raise NotImplementedError("the e2e programs run without a summary writer")


def close_summary_writer(summary_writer):
    return None
