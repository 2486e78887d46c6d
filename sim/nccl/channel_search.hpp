#pragma once
// The channels NCCL's topology search finds and the channels it runs.
//
// NCCL (src/graph/search.cc ncclTopoCompute) looks for the largest number of channels of equal
// speed s, taken from a ladder of speeds (GB/s per channel; sm90 intra 60, 50, 40, 30, ...),
// such that every link a channel crosses still has s left; it starts at the fastest speed the
// system allows, steps down while the next speed is more than 0.49 of the best found, keeps the
// largest nChannels * s, then duplicates channels when the speed is high (ncclTopoDupChannels:
// s >= 25 GB/s and not (sm > 80, s < 50, more than 4 channels) -> 2n channels at s/2), and finally
// tries faster speeds with the channels it has. The graph's nChannels * speed is NCCL's estimate
// of the bandwidth it will reach; the tuner uses it (tuning.cc).
//
// Here the search runs on the symmetric systems of the catalog, where a channel's constraints
// are per-GPU and per-NIC capacities in NCCL's own units (NcclSystem):
//   ring, one host:     n * s <= NVLink bw of a GPU (or its PCIe bw where its GPUs do not use P2P
//                       over NVLink: SHM goes GPU -> CPU -> GPU; 4 x H200 with NCCL_P2P_DISABLE=1
//                       run 2 channels of 24 GB/s, doubled to 4, NCCL 2.28.9)
//   ring, several hosts: n <= sum over NICs of floor(NIC bw / s); n <= sum over GPUs next to a
//                       NIC of floor(PCIe bw / s); n * s <= NVLink bw of a GPU
//   tree:               the ring's channel count; intra speed may rise to twice the inter speed
//   NVLS:               n = GPUs per host, (G + 1) * s <= NVLink bw (each GPU carries every
//                       channel once and its own head channel twice: search.cc TryNvls)
// Then the runtime count (connect.cc ncclTopoPostset): 2n collective channels (ring and tree
// channels doubled), doubled again on Hopper with several nodes and fast rings, clamped by
// NCCL_MIN/MAX_NCHANNELS; NVLS channels NCCL_NVLS_NCHANNELS or 16 (sm90) / 32 (sm100); P2P channels
// (paths.cc ncclTopoComputeP2pChannels) a power of two, per peer 2 x NVLink count over NVLink,
// 2 over PCIe, 2 (fewer at scale) over the network.

#include <string>
#include <vector>

#include "sim/nccl/nccl_env.hpp"
#include "sim/nccl/nccl_system.hpp"
#include "sim/nccl/nccl_version.hpp"

namespace clustersim::sim::nccl {

// One search result (NCCL's struct ncclTopoGraph, the fields the tuner reads).
struct TopoGraph {
  int n_channels = 0;
  double bw_intra = 0;  // GB/s per channel, NCCL units
  double bw_inter = 0;
  PathType type_intra = PathType::NVL;
  PathType type_inter = PathType::PIX;
  bool same_channels = true;
  bool simple_tree = false;  // NCCL fell back to the TREE pattern (tuner: busBw * 0.85)
  double latency_inter_us = 0;
};

struct ChannelPlan {
  TopoGraph ring;
  TopoGraph tree;
  TopoGraph nvls;
  TopoGraph collnet;
  int coll_channels = 1;           // comm->nChannels at run time (ring and tree)
  int nvls_channels = 0;           // comm->nvlsChannels
  int p2p_channels = 1;            // comm->p2pnChannels
  int p2p_channels_per_peer = 1;   // comm->p2pnChannelsPerPeer
  std::vector<std::string> notes;
};

ChannelPlan search_channels(const NcclSystem& system, const NcclVersion& version, const NcclEnv& env);

}  // namespace clustersim::sim::nccl
