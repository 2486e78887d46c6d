"""What the training-step probes (fsdp_step.py, ds_step.py) share: NVLink multicast kept off before
torch initialises NCCL, one process per GPU, a Hugging Face config built from a clustersim preset,
the timed-step loop, and output written whole or not at all.

Import it before torch: it sets NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 and refuses to go on with multicast enabled.
"""

import json
import os
import statistics
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
if os.environ.get("NCCL_NVLS_ENABLE") != "0":
    sys.exit("refusing to run with NVLink multicast enabled (NCCL_NVLS_ENABLE must be 0)")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def bind_rank():
    """After the process group is up: this process's GPU and seed; returns (rank, world)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.manual_seed(1234 + rank)
    return rank, world


def hf_config(preset, layers=0):
    """A transformers config from a clustersim preset (its own `_clustersim` keys dropped), with sdpa
    attention and no KV cache; `layers` > 0 overrides num_hidden_layers."""
    from transformers import AutoConfig

    with open(preset) as f:
        cfg = {k: v for k, v in json.load(f).items() if not k.startswith("_clustersim")}
    if layers:
        cfg["num_hidden_layers"] = layers
    config = AutoConfig.for_model(**cfg)
    config._attn_implementation = "sdpa"
    config.use_cache = False
    return config


def randomize_(model):
    """Random (never zero) weights: the kernels must see real data."""
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    model.train()


def timed_steps(step, warmup, steps, split_steps, barrier_each=False):
    """Runs `warmup` steps, then `steps` timed ones (synchronised at step boundaries), then
    `split_steps` calls of step(split) that fill a dict of phase times. Returns the step times, the
    splits, the slowest rank's median step time, the largest rank's peak allocated and reserved
    bytes (over the timed steps) and this rank's warm-up seconds."""
    t_warm = time.perf_counter()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t_warm
    dist.barrier()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        if barrier_each:
            dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    splits = []
    for _ in range(split_steps):
        if barrier_each:
            dist.barrier()
        s = {"forward": 0.0, "backward": 0.0, "step": 0.0}
        step(s)
        splits.append(s)
    med = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(med, op=dist.ReduceOp.MAX)
    peak = torch.tensor([torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()], device="cuda",
                        dtype=torch.float64)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    return times, splits, float(med.item()), (int(peak[0].item()), int(peak[1].item())), warm_s


def split_medians(splits):
    return {k: statistics.median(s[k] for s in splits) for k in ("forward", "backward", "step")} if splits else {}


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)
