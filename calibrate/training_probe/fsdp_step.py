"""Measures real training steps with PyTorch FSDP2, to validate `clustersim simulate` on the machine
it runs on. One process per GPU (torchrun). The model is built from a clustersim preset (a Hugging
Face config.json) with random weights on the GPUs; the data are random token ids.

  torchrun --nproc_per_node 4 calibrate/training_probe/fsdp_step.py \
      --preset models/presets/llama3-8b.json --seq-len 4096 --micro-batch 1 --steps 8 --out step.json

FSDP2 (fully_shard) per decoder layer and at the root, bf16 parameters with fp32 gradient reduction
(MixedPrecisionPolicy), reshard after forward, AdamW; this is what a scenario with
framework "pytorch", zero_stage 3, grad_reduce_dtype "fp32" describes. The step time is the median of
the timed steps (after warm-up), measured on rank 0 between synchronised points; every rank's median
is gathered and the maximum reported, as a step ends when the slowest rank ends.

NVLink multicast stays off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are set before torch initialises NCCL.
"""

import argparse
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


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", required=True, help="Hugging Face config.json (a clustersim preset)")
    p.add_argument("--seq-len", type=int, default=4096)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--steps", type=int, default=8, help="timed steps")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--checkpointing", choices=["none", "full"], default="none")
    p.add_argument("--layers", type=int, default=0, help="override num_hidden_layers (0: as in the preset)")
    p.add_argument("--out", required=True)
    return p.parse_args()


def main():
    args = parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    torch.manual_seed(1234 + rank)

    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from transformers import AutoConfig, AutoModelForCausalLM

    with open(args.preset) as f:
        cfg_dict = json.load(f)
    cfg_dict = {k: v for k, v in cfg_dict.items() if not k.startswith("_clustersim")}
    if args.layers:
        cfg_dict["num_hidden_layers"] = args.layers
    config = AutoConfig.for_model(**cfg_dict)
    config._attn_implementation = "sdpa"
    config.use_cache = False

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    if args.checkpointing == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    model.to_empty(device="cuda")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)  # random (never zero) weights: the kernels must see real data
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    vocab = config.vocab_size
    tokens = torch.randint(0, vocab, (args.micro_batch, args.seq_len), device="cuda")

    def step():
        out = model(input_ids=tokens, labels=tokens)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    med = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(med, op=dist.ReduceOp.MAX)
    peak = torch.tensor([torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()], device="cuda",
                        dtype=torch.float64)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        result = {
            "framework": "pytorch-fsdp2",
            "preset": os.path.basename(args.preset),
            "num_hidden_layers": config.num_hidden_layers,
            "parameters": int(params),
            "gpus": world,
            "seq_len": args.seq_len,
            "micro_batch_size": args.micro_batch,
            "global_batch_size": args.micro_batch * world,
            "precision": "bf16",
            "grad_reduce_dtype": "fp32",
            "activation_checkpointing": args.checkpointing,
            "optimizer": "adamw (fused)",
            "warmup_steps": args.warmup,
            "timed_steps": args.steps,
            "step_times_s": times,
            "step_time_s": float(med.item()),
            "peak_allocated_bytes": int(peak[0].item()),
            "peak_reserved_bytes": int(peak[1].item()),
            "torch": torch.__version__,
            "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()),
            "gpu_name": torch.cuda.get_device_name(0),
        }
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(tmp, args.out)
        print(f"step {result['step_time_s']:.4f} s, peak allocated {result['peak_allocated_bytes'] / 2**30:.1f} GiB "
              f"({result['preset']}, {world} GPUs, seq {args.seq_len}, mb {args.micro_batch}, "
              f"ckpt {args.checkpointing})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
