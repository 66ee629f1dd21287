"""Fake of upstream ``cosyvoice/utils/common.py``: the global seeding helper."""

import random

import numpy as np
import torch


def set_all_random_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
