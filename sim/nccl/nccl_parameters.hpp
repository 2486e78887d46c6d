#pragma once
// The calibration parameters of the NCCL model ("nccl.*" names in a calibration profile), each
// with its meaning, unit and the fallback used when the profile lacks it. Fallbacks come from the
// catalog (datasheet rates, fabric latencies) combined with NCCL's own assumptions for the chosen
// release (sim/nccl/versions/*.json); a prediction that used any fallback says so and carries the
// fallback's wider uncertainty (hardware::ParameterSet records both).
//
//   name                           unit    meaning; fallback
//   nccl.nvlink.efficiency         ratio   payload rate NCCL's copies reach on NVLink, per direction,
//                                          over the datasheet rate; NCCL's per-link figure (topo.h:
//                                          sm80 20, sm90 20.6, sm100 40.1 GB/s) / catalog per-link rate
//   nccl.nvlink.knee_exponent      ratio   p of the soft minimum between the payload rate a hop's
//                                          channels offer over NVLink and what the link carries,
//                                          (D^-p + L^-p)^(-1/p) (step_program.hpp); the catalog
//                                          GPU's nvlink knee_exponent where it has one (H200 3.2:
//                                          ring all-reduce at 1 to 32 channels on 2 x H200, rms
//                                          1.7% against 5.2% for a hard minimum), else none (max-min
//                                          sharing's hard minimum)
//   nccl.nvlink.ramp_deficit       ratio   d of the NVLink ramp within one kernel launch: a hop's NVLink
//                                          share is L (1 - d e^(-t / tau)) t seconds into the launch
//                                          (step_program.hpp); read only where a profile has it (no
//                                          fallback: no ramp). The fitter seeds it at 0.1 where the
//                                          points run P2P over NVLink (calibrate/nccl_fit.hpp)
//   nccl.nvlink.ramp_time          s       tau of that ramp; with the deficit only (seed 1 ms)
//   nccl.pcie.efficiency           ratio   same for a GPU's PCIe link; NCCL's PCIe figure (x16 Gen4
//                                          24, Gen5 48 GB/s) / catalog PCIe rate
//   nccl.net.efficiency            ratio   payload rate over NIC line rate; the catalog fabric's
//                                          nccl_net_efficiency where it has one (EFA v1/v2: 0.88),
//                                          else 12 GB/s per 100 Gb/s (0.96), the NCCL maintainers'
//                                          rule of thumb
//   nccl.shm.bandwidth             B/s     per-GPU rate of the SHM transport (through host memory)
//                                          each way, where the GPU only sends or only receives;
//                                          min(PCIe rate x pcie efficiency, host memory bandwidth per
//                                          socket / 2, the catalog's rate of a kernel's loads of pinned
//                                          host memory where it has one): NCCL 2.28 shm.cc puts each
//                                          connection's buffer on the receiver's side by default
//                                          (NCCL_SHM_LOCALITY 2) and, without NCCL_SHM_USE_CUDA_MEMCPY,
//                                          the sender's kernel stores into it over PCIe (posted writes)
//                                          and the receiver's kernel loads from it over PCIe (reads,
//                                          slower: H100/H200 Gen5 x16 35.2 GB/s read vs 52.8 written,
//                                          NVIDIA/nvbandwidth issue 24)
//   nccl.shm.two_way_efficiency    ratio   share of nccl.shm.bandwidth each way, and of a channel's
//                                          SHM block rate, that a GPU reaches when it both stores
//                                          into host memory and loads from it (a ring, a chain's
//                                          middle, send/recv; not a 2-rank broadcast or reduce or one
//                                          pair's send, where one GPU only stores and the other only
//                                          loads): the loads' requests go up the GPU's PCIe link
//                                          behind its posted stores; 1 without a measurement.
//                                          4 x H200, kernels on one GPU (clustersim-hostprobe, 8
//                                          blocks): loads 50.7 GB/s and stores 52.4 alone, loads 32.8
//                                          beside stores 45.1; NCCL's 2-GPU SHM broadcast 49.3 GB/s
//                                          at 4 channels, all-reduce 27.7 each way
//   nccl.nvlink.read_efficiency    ratio   share of the NVLink rate P2P read reaches (Simple: the
//                                          receiver loads from the sender's buffer) where the GPUs'
//                                          ports carry data both ways, each load's request crossing
//                                          the link against the data; 1 (read as write) without a
//                                          measurement. 4 x H200, ring all-reduce at 24 channels, read
//                                          against write: 2 GPUs 271 vs 332 GB/s busbw, 4 GPUs 310 vs
//                                          357; a 2-GPU broadcast (data one way) 355 vs 365
//   nccl.shm.host_memory_efficiency ratio  share of a socket's host memory bandwidth (catalog) that
//                                          SHM traffic reaches: each byte is stored into host memory
//                                          and loaded from it, by every GPU of the socket at once;
//                                          0.75 without a measurement (what STREAM sustains of the DDR
//                                          wire rate, TI SPRAD45A). 4 x H200 (one socket): 4 GPUs'
//                                          ring all-reduce at 4 and 8 channels move 23.1 and 21.3
//                                          GB/s busbw each way, 185 and 170 GB/s of host memory
//                                          traffic, where 2 GPUs reach 27.7 (111 GB/s)
//   nccl.shm.host_cache_bytes      bytes   how much of the SHM connections' buffers the host keeps in
//                                          its last-level cache (PCIe writes allocate into a few of
//                                          its ways: Intel DDIO); a collective whose buffers in use, W
//                                          over a socket's connections (shm_fifo_bytes), exceed it
//                                          finds the share h = min(1, C / W) of its traffic there.
//                                          Without a measurement the catalog's io_cache_per_socket;
//                                          absent, none
//   nccl.shm.host_cache_speedup    ratio   host memory's rate for that share over its DRAM rate
//                                          (nccl.shm.host_memory_efficiency): the socket moves
//                                          R / (h / s + 1 - h); without a measurement 1 / 0.75 (the
//                                          cache loses nothing of the DDR wire rate that STREAM
//                                          does). 4 x H200 (calibrate/results/lent-4xh200-2026-11-27-
//                                          shm-cache): the 4-GPU SHM all-reduce at 8 channels moves
//                                          32.5 GB/s busbw at 8 MiB (16 MiB of buffers in use), 29.2
//                                          at 16 MiB (32), 22.0 at 32 MiB (64), 19.3-20.0 from 64 MiB
//                                          (128); clustersim-hostprobe's 4 GPUs storing into 1-4 MiB
//                                          buffers each 181-202 GB/s, into 16-64 MiB 124-143
//   nccl.shm.channel_bandwidth     B/s     what one channel's block moves over SHM with Simple, its
//                                          steps priced as over NVLink (the block loads each step from
//                                          host memory over PCIe); without a measurement
//                                          nccl.shm.bandwidth / 2 (the 2 channels NCCL gives a pair
//                                          without P2P). 4 x H200: a 2-GPU broadcast at 1 channel
//                                          22.5 GB/s, 2 channels 44.5
//   nccl.shm.store_fraction        ratio   Simple's store share of a step over SHM (w(L, S) as
//                                          nccl.store_fraction's): its stores go to host memory as
//                                          posted PCIe writes, its loads of the connection's buffer
//                                          come from host memory over PCIe; nccl.store_fraction
//                                          without a measurement. 4 x H200, one channel: a 2-GPU
//                                          broadcast (copySend, w(1, 2)) moves 22.4 GB/s, a 2-GPU
//                                          all-reduce (w(1, 1), w(2, 2), then a recv) 13.8: 2 / (1 + f)
//                                          = 1.62, f = 0.23
//   nccl.shm.ll_channel_bandwidth  B/s     the same with LL (each 16-byte line's flag polled in host
//                                          memory); without a measurement Simple's SHM figure x LL's
//                                          share of Simple's block rate over NVLink.
//                                          4 x H200: ring all-reduce at 4 channels 9.3 GB/s busbw
//   nccl.simple.half_rate_threads  ratio   threads at which a ring channel's Simple block over NVLink
//                                          moves half its rate: with t threads it moves t / (t +
//                                          t_half) of what it would with many, and the channel
//                                          bandwidths above are those of NCCL's default (512
//                                          threads; 640 with LL128). 4 x H200's one-channel
//                                          runs: 85; the profile's fit: 103
//   nccl.ll.half_rate_threads      ratio   the same with LL (4 x H200: 1850, nearly in
//                                          proportion; fitted 1928)
//   nccl.ll128.half_rate_threads   ratio   the same with LL128 (4 x H200: 400; fitted 572)
//   nccl.shm.half_rate_threads     ratio   the same with Simple over SHM (4 x H200: 940;
//                                          fitted 1528)
//   nccl.nvls.efficiency           ratio   NVLS all-reduce algorithm bandwidth over the NVLink rate
//                                          NCCL assumes for the GPU; NCCL 2.28's nvlsEfficiency (sm90
//                                          0.85, sm100 0.74) x the NVLS graph's channels x speed over
//                                          NCCL's NVLink figure (tuning.cc, search.cc)
//   nccl.ll.channel_bandwidth      B/s     what one channel's block copies with LL (one load and one
//                                          store per payload byte; its steps cost their loads and
//                                          stores where the store share is known); the catalog
//                                          GPU's nccl_ll_channel copy_rate where it has one (H200
//                                          measured 11.1 GB/s: one ring channel's broadcast and reduce
//                                          on 2 GPUs), else NCCL's ring estimate per channel: the
//                                          ring graph's bwIntra x 1/4 (tuning.cc's LL factor for
//                                          all-reduce). No GPU-wide LL limit: NCCL's llMaxBw only
//                                          steers its tuner (LL on 2 x H200 grew linearly to 32
//                                          channels, 160 GB/s, past llMaxBw's 141)
//   nccl.ll.store_fraction         ratio   share of an LL copy's time its stores take; the catalog
//                                          GPU's nccl_ll_channel store_share (H200 0.647); without
//                                          it LL's steps cost alike (unless a profile sets it)
//   nccl.ll.tree_root_weight       ratio   what a tree root's reduce-copy-send costs with LL over
//                                          its loads and stores (collective_program.hpp TreeBlock):
//                                          4 x H200 on one channel measure a 2-rank tree's root at
//                                          C / 5.02 GB/s = 2.32 copies where its loads and stores
//                                          give 2 (Simple's root measures 2.05 with its step cost,
//                                          within the model); 1
//   nccl.ll128.channel_bandwidth   B/s     the same with LL128; the catalog's nccl_ll128_channel
//                                          copy_rate (H200 34.3 GB/s), else NCCL's
//                                          perChMaxRingLL128Bw
//   nccl.ll128.store_fraction      ratio   LL128's store share; the catalog's nccl_ll128_channel
//                                          store_share (H200 0.560), else steps alike
//   nccl.simple.channel_bandwidth  B/s     what one channel's block copies with Simple (one load and
//                                          one store per byte); NCCL's perChMaxTreeBw
//   nccl.simple.slice_overhead     s       block time of one Simple slice's synchronisation over NVLink,
//                                          serial on the block (prims_simple.h genericOp: after its
//                                          copy every slice runs barrier(), then postPeer's
//                                          system-scope fence before the flag store; the next slice
//                                          waits for both); NCCL's per-step Simple latency over LL's,
//                                          per slice of a ring all-reduce chunk: (hwLat NVLink Ring
//                                          Simple - LL) / (ALLREDUCE_CHUNKSTEPS / SLICESTEPS) =
//                                          (3.4 - 0.6) / 2 = 1.4 us in 2.28. A ring broadcast's chain
//                                          pays it per step (one slice per step): 4 x H200 measure
//                                          2.0 us more per 128 KiB step than per 512 KiB one. Over
//                                          SHM the same, per slice of a ring, a chain or a send
//                                          (its flags sit in host memory): 4 x H200, one pair's SHM
//                                          send (128 KiB chunks) moves 36.9 GB/s where a 2-GPU SHM
//                                          broadcast (512 KiB steps) moves 44.5 at 2 channels
//   nccl.simple.tree_step_overhead s       the same for a tree's Simple step (one slice, one step per
//                                          chunk) over NVLink; NCCL's tree step latency, Simple over
//                                          LL: hwLat NVLink Tree Simple - LL = 4.0 - 0.6 = 3.4 us in
//                                          2.28. 4 x H200 measure 2.8-3.1 us per extra step
//                                          (calibrate/results/lent-4xh200-2026-11-22-step-cost)
//   nccl.simple.reduce_slice_overhead s    the same for a ring reduce's chain, whose steps store
//                                          once (recvReduceSend, no copy out): 4 x H200 measure
//                                          1.0 us per step (calibrate/results/lent-4xh200-2026-
//                                          11-22-chain-simple); nccl.simple.slice_overhead
//   nccl.store_fraction            ratio   share of a Simple copy's time its stores take: a step that
//                                          reads two buffers (reduce) or writes two (copy and send)
//                                          costs more than a copy (collective_program.hpp); the
//                                          catalog GPU's sm_store_share where it has one (one
//                                          512-thread block's store cost s / (l + s) per byte, l
//                                          and s solved from copy, sum-of-two and two-output
//                                          patterns, outputs local: calibrate/harness/
//                                          store_probe_kernels.hpp; H200 measured 0.773, H100
//                                          the same chip), else 0.5, loads and stores alike
//   nccl.tree.nvlink_share         ratio   Simple: share of the NVLink rate (nccl.nvlink.efficiency's) that
//                                          a tree's chain of 3 or more ranks per node reaches on a
//                                          middle rank's links, where every byte goes out twice (up
//                                          to the parent, down to the child) and comes in twice;
//                                          NCCL 2.28's own figure for a tree all-reduce against its
//                                          graph's bandwidth, 0.92 (tuning.cc: Tree all-reduce
//                                          busBw x .92). Measured on 4 x H200 with 24 channels
//                                          (calibrate/results/lent-4xh200-2026-11-22-channel-count):
//                                          a middle rank sends 313 GB/s with Simple where the ring
//                                          reaches 340 (0.92)
//   nccl.tree.ll_nvlink_share      ratio   the same with LL (311 GB/s of wire bytes out of a middle
//                                          rank); NCCL's figure, 0.92, as the fallback. Apart from
//                                          Simple's because the fit over every size puts LL's at
//                                          0.85 on 4 x H200 and Simple's at 0.92
//   nccl.tree.ll128_nvlink_share   ratio   the same with LL128 (282 GB/s of wire bytes: 0.83);
//                                          NCCL 2.28's one-node Tree LL128 figure, 7/9 of the
//                                          graph's payload bandwidth (tuning.cc), x 16/15 wire
//                                          bytes per payload byte = 0.83; across nodes its
//                                          120/128 x 16/15 = 1
//   nccl.latency.base_scale        ratio   multiplies NCCL's base latency (per collective: launch,
//                                          set-up, final synchronisation); 1
//   nccl.latency.nvlink_scale      ratio   multiplies NCCL's per-step latency over NVLink; 1
//   nccl.latency.pcie_scale        ratio   same over PCIe and SHM; 1
//   nccl.latency.net_scale         ratio   same for the network proxy path; 1
//   nccl.net.socket_proxy_bandwidth B/s    NCCL's socket transport over a host's own interface (a bare
//                                          system's GPUs in different NCCL nodes): the bytes one
//                                          rank's proxy thread copies through the kernel's TCP stack
//                                          per second, sent and received together (one thread does
//                                          both: a rank that sends and receives at once moves half
//                                          of it each way); fallback twice the 10 Gb/s NCCL assumes
//                                          each way for an interface with no speed. 4 x H200 over
//                                          loopback, 8 to 32 MiB: a 2-rank broadcast (one way) 4.7
//                                          GB/s, rings and chains 5.2 to 6.3 GB/s a rank
//   nccl.net.socket_message_overhead s     the same proxy's own time per message it sends or
//                                          receives (a slice of one connection), spent one message
//                                          after another: each message of a rank that keeps k
//                                          connections busy waits k of them before its bytes go
//                                          (a ring's rank: a send and a receive per channel; a
//                                          broadcast's or reduce's chain: one per channel, each
//                                          slice received and then forwarded). Fallback 1 us, the
//                                          order of a system call (no measurement); over loopback on
//                                          4 x H200 a 4-rank ring step with Simple costs 50 to 60 us
//                                          beyond its bytes at 128 KiB to 2 MiB
//   nccl.net.socket_p2p_efficiency ratio   the share of that proxy rate NCCL's P2P path (send/recv,
//                                          alltoall) reaches: each P2P flow counts 1 / it on the
//                                          proxy. Fallback 1 (no measurement). 2 x H200 over
//                                          loopback (lent-2xh200-2026-11-29-net-p2p): at the same
//                                          message size and channel count a send/recv moves about
//                                          15% less each way than an all-gather, and a model
//                                          without it is too fast by the same factor, about 1.19,
//                                          at 128 KiB, 512 KiB and 2 MiB chunks: a rate, not a
//                                          cost per message (the shared proxy buffers change
//                                          nothing; the kernel's warp split moves 22.6 GB/s a rank
//                                          over SHM); the cause is not identified.
//                                          Fitted with the built-in profile: 0.80
//   nccl.net.latency               s       NIC-to-NIC one-way latency of a small message; the
//                                          catalog fabric's nic_latency (+ 2 switch latencies when
//                                          the path leaves a leaf switch)
//   nccl.host.call_overhead        s       host time of one NCCL call on one GPU (enqueue and kernel
//                                          launch); the release table's host_call_overhead estimate
//   nccl.host.empty_call_overhead  s       host time of a call that launches nothing (one rank, in
//                                          place: enqueue.cc returns before any launch); a tenth of
//                                          nccl.host.call_overhead
//   nccl.host.empty_group_overhead s       host time of a group end whose tasks all drop before any
//                                          launch (a send/recv to itself in place: group.cc
//                                          groupLaunch still prepares the group, enqueue.cc
//                                          scheduleP2pTasksToPlan then skips it); an empty call's.
//                                          4 x H200: 1.4 us for nccl-tests' four calls, where the
//                                          in-place collectives' single call measures 0.2-0.3 us
//   nccl.host.sync_overhead        s       host time of the wait that closes a timed loop, paid once
//                                          per -n launches (nccl-tests' completeColl ->
//                                          testStreamSynchronize: a cudaStreamQuery loop, then the
//                                          clock read; the harness's polling wait alike): a wait on a
//                                          stream with nothing left to run still costs a query; an
//                                          empty call's as the fallback. 4 x H200: one rank's in-place
//                                          calls (which launch nothing) take 0.21-0.23 us each over
//                                          2,000 launches and 0.22 or 0.30 us over 20
//   nccl.host.group_comm_overhead  s       extra host time per communicator when one thread's group
//                                          launches several (nccl-tests -g N; group.cc doLaunches
//                                          switches device for each communicator's prepare, launch
//                                          round and finish); the release table's estimate (1.75 us,
//                                          from a -g 4 run: 4 x (4 + 1.75) us per iteration)
//   nccl.host.process_serial_overhead s    host time of a call that launches during which no other
//                                          thread of the same process can launch (nccl-tests -t T:
//                                          the T threads' calls of one iteration queue there, the
//                                          rest of each call runs beside the others); half of
//                                          nccl.host.call_overhead. 4 x H200, sizes the GPUs finish
//                                          first: every op 10-13 us an iteration with -t 4 (one
//                                          process), 5-9 us with one process per GPU; all-reduce
//                                          7.1 us with -t 2, about 10 with -t 3; -t 2 -g 2 19 us,
//                                          where each thread alone would take 12
// One rank (src/device/onerank.cu ncclLaunchOneRank): NCCL copies the input to the output with
// cudaMemcpyAsync (out of place) or does nothing (in place); the copy is a device-to-device copy
// of one GPU, priced with the compute model's memory parameters (models/compute_parameters.hpp
// names and fallbacks, shared so that one memory calibration serves both):
//   compute.memory.efficiency      ratio   share of the catalog HBM bandwidth a copy reaches; 0.80
//   compute.kernel_overhead        s       fixed GPU time of a kernel; 2 us
//   copy time = compute.kernel_overhead + 2 x bytes / (HBM bandwidth x compute.memory.efficiency)
//
// Protocol line formats are NCCL facts, not parameters: LL sends 8 data bytes per 16-byte line
// (wire factor 2), LL128 120 of every 128 bytes (16/15), Simple raw data (1).

#include <string>

#include "hardware/calibration_profile.hpp"
#include "hardware/units.hpp"
#include "sim/nccl/channel_search.hpp"
#include "sim/nccl/nccl_system.hpp"
#include "sim/nccl/nccl_version.hpp"

namespace clustersim::sim::nccl {

struct NcclRates {
  // Effective per-direction capacities (payload bytes per second) of one GPU's links.
  Bandwidth nvlink;    // datasheet x nvlink efficiency (0 without usable NVLink)
  double nvlink_knee = 0;  // nccl.nvlink.knee_exponent (0: a hard minimum)
  double nvlink_ramp_deficit = 0;  // nccl.nvlink.ramp_deficit (0: no ramp within a launch)
  Duration nvlink_ramp_time;       // nccl.nvlink.ramp_time
  double nvlink_read_efficiency = 1;  // nccl.nvlink.read_efficiency (P2P read, Simple, both ways)
  Bandwidth pcie;      // datasheet x pcie efficiency
  Bandwidth shm;       // one GPU's SHM rate each way where it only stores or only loads (nccl.shm.bandwidth)
  double shm_two_way_efficiency = 1;  // share of it where the GPU does both (nccl.shm.two_way_efficiency)
  Bandwidth shm_simple_channel;  // one channel's block over SHM, Simple (nccl.shm.channel_bandwidth)
  Bandwidth shm_ll_channel;      // the same with LL (nccl.shm.ll_channel_bandwidth)
  double shm_store_fraction = -1;  // Simple's store share over SHM (nccl.shm.store_fraction; < 0: none)
  Bandwidth host_memory;         // one socket's host memory for SHM traffic
  // The share of the last-level cache SHM buffers stay in (nccl.shm.host_cache_bytes; 0: none)
  // and how much faster host memory serves them there (nccl.shm.host_cache_speedup).
  double host_cache_bytes = 0;
  double host_cache_speedup = 1;
  Bandwidth nic;       // one NIC device (as NCCL sees it) x net efficiency
  double nvls_efficiency = 0;
  // The NVLS resource: NCCL's NVLink figure for the GPU x nvls_efficiency (not the measured P2P
  // NVLink rate: NVLS reduces in the switch and has its own efficiency; 0 without NVLS).
  Bandwidth nvls;
  // Protocol limits.
  // Threads at which a ring channel's block moves half of what it moves with many: its rate
  // follows t / (t + t_half) (collective_program.hpp thread_factor); per protocol over P2P and
  // NET, and Simple over SHM (nccl.<proto>.half_rate_threads, nccl.shm.half_rate_threads).
  double simple_half_threads = 0, ll_half_threads = 0, ll128_half_threads = 0, shm_half_threads = 0;
  Bandwidth ll_channel;
  Bandwidth ll128_channel;
  Bandwidth simple_channel;
  Duration simple_slice_overhead;  // over NVLink and SHM (see the table)
  Duration simple_reduce_slice_overhead;  // a reduce chain's step, over NVLink
  Duration simple_tree_step_overhead;     // a tree's step, over NVLink
  double store_fraction = 0.5;
  // LL's and LL128's store shares; negative: their steps cost alike (no measurement).
  double ll_store_fraction = -1, ll128_store_fraction = -1;
  double ll_tree_root_weight = 1;  // nccl.ll.tree_root_weight
  // The share of a P2P block's copy rate that one side of a work that both sends and receives
  // reaches while the other side has nothing to copy (nccl.p2p.alone_share).
  double p2p_alone_share = 1;
  // Share of the NVLink rate a tree's chain reaches with Simple (nccl.tree.nvlink_share), LL
  // (nccl.tree.ll_nvlink_share) and LL128 (nccl.tree.ll128_nvlink_share).
  double tree_nvlink_share = 1, tree_ll_nvlink_share = 1, tree_ll128_nvlink_share = 1;
  // Latency scales and figures.
  double base_scale = 1, nvlink_scale = 1, pcie_scale = 1, net_scale = 1;
  Duration net_latency;
  // NCCL's socket transport over a host's own interface: the proxy's time per message
  // (nccl.net.socket_message_overhead); zero elsewhere.
  Duration socket_message_overhead;
  // The share of the proxy's rate NCCL's P2P path (send/recv, alltoall) reaches over that
  // transport (nccl.net.socket_p2p_efficiency); 1 elsewhere.
  double socket_p2p_efficiency = 1;
  Duration host_call;
  Duration host_group_comm;
  Duration host_empty_call;
  Duration host_empty_group;
  Duration host_sync;  // the closing wait of a timed loop (once per -n launches)
  Duration host_process_serial;  // the part of a call no other thread of the process overlaps
  // One rank's local copy: payload rate (each byte read and written) and fixed GPU time.
  Bandwidth local_copy;
  Duration local_copy_overhead;
  bool any_uncalibrated = false;
};

// Looks every parameter up in `params` (recording use and provenance) with its fallback.
NcclRates resolve_rates(hardware::ParameterSet& params, const NcclSystem& system, const ChannelPlan& channels,
                        const NcclVersion& version);

}  // namespace clustersim::sim::nccl
