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

With --cpu-offload, fully_shard gets offload_policy=CPUOffloadPolicy(pin_memory=True): the sharded
fp32 parameters, their gradients and the optimizer states live in pinned host memory, each layer's
parameters are copied to the GPU for its all-gather, gradients are copied back after the
reduce-scatter, and the optimizer steps on the CPU (torch.optim.AdamW with torch's default
implementation for CPU tensors unless --optimizer says otherwise). The model is then initialised on
the GPU and fully_shard moves the shards to the host.

After the timed steps, --split-steps more are timed with a synchronisation after the forward, the
backward and the optimizer step (zero_grad included), whose medians give the phase split. The thread
counts in effect (OMP_NUM_THREADS, torch's intra-op threads) are recorded.

NVLink multicast stays off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are set before torch initialises NCCL.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# probe_common keeps NVLink multicast off before torch loads.
from probe_common import bind_rank, dist, hf_config, randomize_, split_medians, timed_steps, torch, write_json  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", required=True, help="Hugging Face config.json (a clustersim preset)")
    p.add_argument("--seq-len", type=int, default=4096)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--steps", type=int, default=8, help="timed steps")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--checkpointing", choices=["none", "full"], default="none")
    p.add_argument("--layers", type=int, default=0, help="override num_hidden_layers (0: as in the preset)")
    p.add_argument("--cpu-offload", action="store_true", help="CPUOffloadPolicy(pin_memory=True)")
    p.add_argument("--optimizer", choices=["fused", "foreach", "forloop", "default"], default=None,
                   help="AdamW implementation (default: fused on the GPU; torch's default with --cpu-offload)")
    p.add_argument("--split-steps", type=int, default=3, help="steps timed phase by phase")
    p.add_argument("--out", required=True)
    return p.parse_args()


def main():
    args = parse_args()
    dist.init_process_group("nccl")
    rank, world = bind_rank()

    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard
    from transformers import AutoModelForCausalLM

    config = hf_config(args.preset, args.layers)

    # With offload the model is built on the GPU (buffers such as the rotary frequencies must stay
    # there) and fully_shard moves the parameter shards to pinned host memory.
    with torch.device("cuda" if args.cpu_offload else "meta"):
        model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    if args.checkpointing == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    offload = CPUOffloadPolicy(pin_memory=True) if args.cpu_offload else OffloadPolicy()
    for layer in model.model.layers:
        fully_shard(layer, mp_policy=mp, reshard_after_forward=True, offload_policy=offload)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True, offload_policy=offload)
    if not args.cpu_offload:
        model.to_empty(device="cuda")
    randomize_(model)
    optim = args.optimizer or ("default" if args.cpu_offload else "fused")
    opt_kw = {"fused": {"fused": True}, "foreach": {"foreach": True}, "forloop": {"foreach": False},
              "default": {}}[optim]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, **opt_kw)
    param_device = str(next(iter(model.parameters())).device)
    vocab = config.vocab_size
    tokens = torch.randint(0, vocab, (args.micro_batch, args.seq_len), device="cuda")

    def step(split=None):
        if split is not None:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        out = model(input_ids=tokens, labels=tokens)
        if split is not None:
            torch.cuda.synchronize()
            t1 = time.perf_counter()
        out.loss.backward()
        if split is not None:
            torch.cuda.synchronize()
            t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if split is not None:
            torch.cuda.synchronize()
            t3 = time.perf_counter()
            split.update(forward=t1 - t0, backward=t2 - t1, step=t3 - t2)

    times, splits, med, peak, _ = timed_steps(step, args.warmup, args.steps, args.split_steps, barrier_each=True)
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
            "optimizer": f"adamw ({optim})",
            "cpu_offload": bool(args.cpu_offload),
            "param_device": param_device,
            "warmup_steps": args.warmup,
            "timed_steps": args.steps,
            "step_times_s": times,
            "step_time_s": med,
            "split_steps": args.split_steps,
            "split_times_s": splits,
            "split_median_s": split_medians(splits),
            "threads": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                        "torch_num_threads": torch.get_num_threads(), "cpu_count": os.cpu_count()},
            "peak_allocated_bytes": peak[0],
            "peak_reserved_bytes": peak[1],
            "torch": torch.__version__,
            "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()),
            "gpu_name": torch.cuda.get_device_name(0),
        }
        try:
            import transformers
            result["transformers"] = transformers.__version__
        except Exception:
            pass
        write_json(args.out, result)
        sm = result["split_median_s"]
        print(f"step {result['step_time_s']:.4f} s (fwd {sm.get('forward', 0):.4f} bwd {sm.get('backward', 0):.4f} "
              f"step {sm.get('step', 0):.4f}), peak allocated {result['peak_allocated_bytes'] / 2**30:.1f} GiB "
              f"({result['preset']}, {world} GPUs, seq {args.seq_len}, mb {args.micro_batch}, "
              f"ckpt {args.checkpointing}, offload {args.cpu_offload}, adamw {optim}, "
              f"threads {result['threads']})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
