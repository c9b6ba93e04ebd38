"""A training loop that confuses activation checkpointing with saving training state."""

import torch
import torch.distributed.checkpoint as dcp
from torch.utils.checkpoint import checkpoint


def evaluate(model, x):
    with torch.no_grad():
        return checkpoint(model, x, use_reentrant=False)


def save(model, path):
    checkpoint(model.state_dict(), path)
    dcp.save(model, checkpoint_id=path)
