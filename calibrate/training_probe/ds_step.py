"""Measures real training steps with DeepSpeed ZeRO (optionally with optimizer and parameter offload to
host memory), to validate `clustersim simulate` on the machine it runs on. One process per GPU
(torchrun). The model is a Hugging Face causal LM built from a clustersim preset (a Hugging Face
config.json) with random weights, sdpa attention, bf16; the data are random token ids.

  torchrun --nproc_per_node 1 calibrate/training_probe/ds_step.py \
      --preset models/presets/llama3.2-1b.json --seq-len 2048 --micro-batch 2 --grad-accum 1 \
      --zero-stage 2 --offload-optimizer --steps 4 --out step.json

The DeepSpeed config is what the Hugging Face Trainer's "auto" values resolve to: optimizer "AdamW"
(DeepSpeedCPUAdam when the optimizer is offloaded, FusedAdam otherwise; --torch-adam asks for
torch.optim.AdamW instead), reduce_bucket_size = h^2, stage3_prefetch_bucket_size = 0.9 h^2,
stage3_param_persistence_threshold = 10 h (h: hidden size), overlap_comm and contiguous_gradients
on, gradient clipping 1.0, bf16. Offloaded state lives in pinned host memory.

A step is one optimizer step: --grad-accum micro-batches of forward and backward, each followed
by engine.step() (DeepSpeed steps the optimizer at the accumulation boundary). After --warmup
steps, --steps steps are timed end to end (synchronised only at step boundaries; the median is
the step time), then --split-steps more with a synchronisation after every engine.forward,
engine.backward and engine.step, whose summed phase times (medians over those steps) give the
forward / backward / optimizer-step split. Peak GPU memory is torch.cuda.max_memory_allocated over
the timed steps. The thread counts in effect are recorded: OMP_NUM_THREADS, torch's intra-op
threads, and the OpenMP runtime's (libgomp, which DeepSpeed's CPU Adam is built against).

NVLink multicast stays off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are set before torch initialises NCCL.
"""

import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# probe_common keeps NVLink multicast off before torch loads.
from probe_common import bind_rank, dist, hf_config, randomize_, split_medians, timed_steps, torch, write_json  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", required=True, help="Hugging Face config.json (a clustersim preset)")
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--zero-stage", type=int, choices=[1, 2, 3], default=2)
    p.add_argument("--offload-optimizer", action="store_true", help="offload_optimizer: cpu, pinned")
    p.add_argument("--offload-param", action="store_true", help="offload_param: cpu, pinned (ZeRO-3 only)")
    p.add_argument("--torch-adam", action="store_true", help="torch.optim.AdamW instead of DeepSpeed's Adam")
    p.add_argument("--steps", type=int, default=4, help="timed steps")
    p.add_argument("--split-steps", type=int, default=3, help="steps timed phase by phase")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--layers", type=int, default=0, help="override num_hidden_layers (0: as in the preset)")
    p.add_argument("--out", required=True)
    return p.parse_args()


def omp_threads():
    """Threads of the process's OpenMP runtime (libgomp), or None where it cannot be asked."""
    try:
        return int(ctypes.CDLL("libgomp.so.1").omp_get_max_threads())
    except (OSError, AttributeError):
        return None


def main():
    args = parse_args()
    if args.offload_param and args.zero_stage != 3:
        sys.exit("--offload-param needs --zero-stage 3")
    import deepspeed
    from transformers import AutoModelForCausalLM

    deepspeed.init_distributed("nccl")
    rank, world = bind_rank()

    config = hf_config(args.preset, args.layers)
    h = config.hidden_size

    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16)
    randomize_(model)
    params = sum(p.numel() for p in model.parameters())

    opt_params = {"lr": 1e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}
    if args.torch_adam:
        opt_params["torch_adam"] = True
    zero = {
        "stage": args.zero_stage,
        "overlap_comm": True,
        "contiguous_gradients": True,
        "reduce_bucket_size": h * h,
        "allgather_bucket_size": h * h,
    }
    if args.zero_stage == 3:
        zero.update({
            "stage3_prefetch_bucket_size": int(0.9 * h * h),
            "stage3_param_persistence_threshold": 10 * h,
            "stage3_max_live_parameters": int(1e9),
            "stage3_max_reuse_distance": int(1e9),
            "sub_group_size": int(1e9),
        })
    if args.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if args.offload_param:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    ds_config = {
        "train_micro_batch_size_per_gpu": args.micro_batch,
        "gradient_accumulation_steps": args.grad_accum,
        "train_batch_size": args.micro_batch * args.grad_accum * world,
        "bf16": {"enabled": True},
        "gradient_clipping": 1.0,
        "optimizer": {"type": "AdamW", "params": opt_params},
        "zero_optimization": zero,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    t_init = time.perf_counter()
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                                   config=ds_config)
    init_s = time.perf_counter() - t_init
    vocab = config.vocab_size
    tokens = [torch.randint(0, vocab, (args.micro_batch, args.seq_len), device="cuda")
              for _ in range(args.grad_accum)]

    def step(split=None):
        for mb in range(args.grad_accum):
            if split is not None:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            loss = engine(input_ids=tokens[mb], labels=tokens[mb]).loss
            if split is not None:
                torch.cuda.synchronize()
                t1 = time.perf_counter()
            engine.backward(loss)
            if split is not None:
                torch.cuda.synchronize()
                t2 = time.perf_counter()
            engine.step()
            if split is not None:
                torch.cuda.synchronize()
                t3 = time.perf_counter()
                split["forward"] += t1 - t0
                split["backward"] += t2 - t1
                split["step"] += t3 - t2
        return loss

    # The last step's loss is kept for the record.
    last = {}

    def timed(split=None):
        last["loss"] = step(split)

    times, splits, med, peak, warm_s = timed_steps(timed, args.warmup, args.steps, args.split_steps)
    loss = last["loss"]
    if rank == 0:
        split_med = split_medians(splits)
        opt_name = type(optimizer.optimizer if hasattr(optimizer, "optimizer") else optimizer).__name__
        try:
            import transformers
            tf_version = transformers.__version__
        except Exception:
            tf_version = None
        result = {
            "framework": "deepspeed",
            "deepspeed": deepspeed.__version__,
            "deepspeed_git_hash": getattr(deepspeed, "__git_hash__", None),
            "preset": os.path.basename(args.preset),
            "num_hidden_layers": config.num_hidden_layers,
            "hidden_size": h,
            "parameters": int(params),
            "gpus": world,
            "seq_len": args.seq_len,
            "micro_batch_size": args.micro_batch,
            "gradient_accumulation_steps": args.grad_accum,
            "global_batch_size": args.micro_batch * args.grad_accum * world,
            "precision": "bf16",
            "zero_stage": args.zero_stage,
            "offload_optimizer": "cpu" if args.offload_optimizer else "none",
            "offload_param": "cpu" if args.offload_param else "none",
            "pin_memory": True,
            "optimizer": f"AdamW ({opt_name})",
            "ds_config": ds_config,
            "warmup_steps": args.warmup,
            "timed_steps": args.steps,
            "step_times_s": times,
            "step_time_s": med,
            "split_steps": args.split_steps,
            "split_times_s": splits,
            "split_median_s": split_med,
            "split_sum_s": sum(split_med.values()) if split_med else None,
            "init_s": init_s,
            "warmup_s": warm_s,
            "loss": float(loss.item()),
            "peak_allocated_bytes": peak[0],
            "peak_reserved_bytes": peak[1],
            "threads": {
                "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                "torch_num_threads": torch.get_num_threads(),
                "libgomp_max_threads": omp_threads(),
                "cpu_count": os.cpu_count(),
                "affinity": len(os.sched_getaffinity(0)),
            },
            "torch": torch.__version__,
            "transformers": tf_version,
            "cuda": torch.version.cuda,
            "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()),
            "gpu_name": torch.cuda.get_device_name(0),
        }
        write_json(args.out, result)
        sm = split_med
        print(f"step {result['step_time_s']:.4f} s (fwd {sm.get('forward', 0):.4f} bwd {sm.get('backward', 0):.4f} "
              f"step {sm.get('step', 0):.4f}), peak allocated {result['peak_allocated_bytes'] / 2**30:.1f} GiB "
              f"({result['preset']}, zero {args.zero_stage}, offload opt {result['offload_optimizer']} param "
              f"{result['offload_param']}, ga {args.grad_accum}, {opt_name}, omp {result['threads']})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
