from torch.utils import checkpoint


def run(block, x):
    return checkpoint(block, x, use_reentrant=False)
