"""Suite-wide settings."""

import torch

# One intra-op thread: the tiny models here gain nothing from more, and a busy 2-core machine
# with spinning OpenMP threads can slow a multi-threaded step down a hundredfold.
torch.set_num_threads(1)
