#pragma once
// From a cluster description (cluster_config.hpp) to a Topology. Every figure comes from the
// catalog (hardware::NodeSpec and the fabric) or, for hop latencies the catalog does not hold,
// from a ParameterSet with a documented fallback.
//
// Inside a node (per direction, B = bytes per second):
//   NVSwitch board: one switch vertex per node and, per GPU, GPU -> NVSwitch and NVSwitch -> GPU
//     with B = nvlink.links x nvlink.link_bandwidth (H100: 18 x 25 GB/s = 450 GB/s). The board's
//     planes (interconnect.nvswitch_chips, links_per_chip: H100 4 chips, 5/4/4/5 links) are
//     aggregated: the switches are non-blocking and a GPU stripes its traffic over all of its
//     NVLinks (the hardware interleaves addresses across links), so no single flow is confined to
//     one plane and the only constraint a flow meets is its GPU's total NVLink bandwidth at each
//     end. The plane counts are kept in NodeLayout for reports. (NVLink SHARP reductions in the
//     switch are the NCCL model's business: it routes its flows through the switch vertex.)
//   Direct NVLink mesh: a link each way between every pair, B = link_bandwidth x
//     floor(links / (gpus - 1)) (at least one link): the data gives a GPU's link count, not its
//     pairing, and a full mesh spreads the links evenly.
//   PCIe: each GPU and each NIC to its PCIe switch (catalog pcie_switches), B = the GPU's PCIe
//     figure (gpu.pcie.bandwidth: the switch's downstream ports are of the board's generation; a
//     NIC's line rate, lower, is its network link); each switch to its CPU socket (root complex),
//     B = pcie_switch_uplink (the instance's figure where it has one). A switch sits on socket
//     floor(numa_node x sockets / numa_nodes).
//   Host: each socket to its memory and back, B = memory_bandwidth_per_socket in each direction
//     (reads and writes are not split: a flow-level approximation that over-states a memory
//     serving both at once); sockets to each other, B = inter_socket_bandwidth. This is the path
//     of NCCL's SHM transport, of host-staged network transfers without GPUDirect RDMA, and of
//     CPU offload.
//
// The network (ResolvedNetwork; one leaf port per NIC):
//   single_switch: every NIC to one switch.
//   leaf_spine: nodes_per_leaf nodes per leaf; every NIC of those nodes on that leaf.
//   rail_optimized: per group of nodes_per_leaf nodes, one leaf per rail (NIC index i of every
//     node of the group on leaf (group, i)).
//   With more than one leaf, a spine layer: `spines` spine switches (default 1 aggregate), each
//   leaf linked to each with B = (NICs a full leaf holds x NIC bandwidth) / oversubscription /
//   spines, so a leaf's uplinks carry 1/oversubscription of what its NICs can offer.
//   NIC links: B = the NIC bandwidth.
//
// Latencies (paid once by a flow, summed over its route):
//   NIC <-> leaf: fabric.nic_latency / 2 each way, so NIC -> leaf -> NIC adds up to nic_latency,
//     the catalog's "NIC to NIC through one switch";
//   leaf <-> spine: fabric.switch_latency each way (two more switches on a spine path);
//   NVLink hops: parameter net.nvlink.hop_latency; PCIe hops: net.pcie.hop_latency; memory and
//     inter-socket hops: net.host.hop_latency. Fallback for all three: 0. The catalog holds no
//     figure for them, and the small-message latency of a GPU-to-GPU copy is carried by the
//     NCCL model's per-step overheads (its nccl.* parameters); a calibration profile may set them.

#include "hardware/calibration_profile.hpp"
#include "hardware/catalog.hpp"
#include "sim/net/cluster_config.hpp"
#include "sim/net/topology.hpp"

namespace clustersim::sim {

// Builds the topology of `config`. `catalog` resolves an overridden fabric name; `params` (may be
// null) supplies the hop latencies and records that they were used.
Topology build_topology(const hardware::Catalog& catalog, const ClusterConfig& config,
                        hardware::ParameterSet* params = nullptr);

// The parameter names read by build_topology.
inline constexpr const char* NVLINK_HOP_LATENCY = "net.nvlink.hop_latency";
inline constexpr const char* PCIE_HOP_LATENCY = "net.pcie.hop_latency";
inline constexpr const char* HOST_HOP_LATENCY = "net.host.hop_latency";

}  // namespace clustersim::sim
