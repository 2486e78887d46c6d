#pragma once
// Transfers as flows: the one interface through which workloads (the NCCL model, the step
// executor, CPU offload) move bytes over the topology.
//
// A flow of B bytes on a route R with an optional rate cap c:
//   t_start            when transfer() is called;
//   t_active = t_start + sum_{l in R} latency_l (the route's latency, paid once, before any byte
//              moves);
//   then its bytes move at its max-min fair rate r(t) (max_min_solver.hpp), which changes whenever
//   a flow starts or ends anywhere its bottleneck can feel it;
//   t_end: the first time with integral_{t_active}^{t_end} r(t) dt = B, rounded once to the
//   picosecond.
// One flow alone on a route of bottleneck bandwidth b: t_end - t_start = latency + B / min(b, c).
//
// Bookkeeping is lazy: a flow holds (bytes left at t_last, rate since t_last); only when its rate
// changes are its bytes brought up to date and its completion predicted again:
//   left  -= r_old x (now - t_last);   t_end = now + left / r_new.
// Predicted completions and the ends of start latencies sit in indexed queues ordered by (time,
// start sequence): the completions in a TieredHeap (tiered_heap.hpp: a 4-ary heap of those due
// soonest, the others unordered, so that a rate change's new prediction mostly writes one entry
// and a pop walks a heap an eighth as large: on the benchmark at 10,000 flows, 7 to 8% more
// completions a second than one 4-ary heap of them all, in interleaved runs), the latencies in an
// indexed 4-ary heap, and flows with no latency in a list for the event at the current time. The
// network keeps a single engine event armed at the earliest of them, and when its event is done
// goes straight on to its next time if nothing else is due first (Simulation::advance_to). What a
// rate change touches per flow (bytes left, when) is kept apart from the rest of its record, 16
// bytes a flow; the start sequence, read only when two times are equal, sits with the rest.
//
// Prefetching: the next completion and the next end of latency are known (the tops of the heaps)
// long before they are handled, so while the callbacks and the solve of the current time run, the
// network asks the memory for what those will touch, in three stages each reading only what the
// stage before brought in: the records (after the current time's pops; the solver's holds the
// links of the first hops), the links and the latent route (after the callbacks), then the
// entries of the links' flow lists that taking the flow off reads, or the latent route's links
// (after the solve). A flow in its start latency is prefetched only when its end comes before the
// next completion. The rate changes of a solve likewise ask for their progress entries and their
// places in the completion queue's position table before the first is written, so that those
// misses overlap instead of each waiting behind the previous heap update. At 10,000 flows nearly
// every such record is a miss in the core's own caches; the hints change no result. A flow in its
// start latency keeps its route's links in a block of a pool (block_pool.hpp) sized to the route,
// not a whole Route.
//
// Batching: transfer() and cancel() never recompute rates themselves. Everything that happens at
// one simulated time - flows whose latency ends, flows that complete, the transfers their
// completion callbacks start - is gathered and the rates are recomputed once, at the end of the
// network's event for that time. Consequently rate() of a flow started at the current time reads
// 0 until that event has run, and completion callbacks see the rates as they were before the
// completions they report. Completion callbacks run in (completion time, start order), so the same
// inputs give the same order and times.
//
// A flow whose bytes are 0 completes when its latency ends. A flow on an empty route (source ==
// destination) moves at its cap, or completes at once when it has none.
//
// Lifetime: the network refers to the Simulation and the Topology it was made with; both must
// outlive it (Simulation::emplace_model gives it the simulation's life). Not thread-safe.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/engine/cache_line_allocator.hpp"
#include "sim/engine/indexed_heap.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/engine/tiered_heap.hpp"
#include "sim/net/block_pool.hpp"
#include "sim/net/max_min_solver.hpp"
#include "sim/net/router.hpp"
#include "sim/net/topology.hpp"

namespace clustersim::sim {

struct FlowId {
  static constexpr std::uint32_t NONE = UINT32_MAX;
  std::uint32_t slot = NONE;
  std::uint32_t generation = 0;
  bool valid() const { return slot != NONE; }
  friend bool operator==(const FlowId&, const FlowId&) = default;
};

struct FlowCompletion {
  FlowId id;
  std::uint64_t tag = 0;  // FlowOptions::tag of the transfer
  TimePoint started;      // when transfer() was called
  TimePoint finished;
  Bytes bytes;
};

// An object told of completions (no allocation per flow; the tag says which transfer it was).
class FlowHandler {
 public:
  virtual void on_flow_complete(const FlowCompletion& done) = 0;

 protected:
  ~FlowHandler() = default;
};

using FlowFunction = std::function<void(const FlowCompletion&)>;

// What a completion calls: a FlowHandler, a function, or nothing.
class OnFlowComplete {
 public:
  OnFlowComplete() = default;
  OnFlowComplete(FlowHandler& handler) : handler_(&handler) {}  // NOLINT: implicit by design
  OnFlowComplete(FlowFunction fn) : fn_(std::move(fn)) {}       // NOLINT
  template <class F>
    requires(std::is_invocable_v<F&, const FlowCompletion&> && !std::is_same_v<std::decay_t<F>, OnFlowComplete> &&
             !std::is_same_v<std::decay_t<F>, FlowFunction>)
  OnFlowComplete(F&& fn) : fn_(std::forward<F>(fn)) {}  // NOLINT

 private:
  friend class FlowNetwork;
  FlowHandler* handler_ = nullptr;
  FlowFunction fn_;
};

struct FlowOptions {
  std::optional<Bandwidth> rate_cap = std::nullopt;  // the flow's own limit (positive)
  std::uint32_t path_hint = 0;        // picks among equal routes (router.hpp); ignored on explicit routes
  std::uint64_t tag = 0;              // handed back in FlowCompletion
};

enum class FlowState { GONE, LATENT, ACTIVE };  // GONE: completed, cancelled or never started

class FlowNetwork;

// Told after each recomputation of rates, with the new rates in place (a trace samples link loads
// there: link_usage(l).load). Optional; it must not start or cancel flows.
class RateObserver {
 public:
  virtual void on_rates_changed(const FlowNetwork& network, TimePoint now) = 0;

 protected:
  ~RateObserver() = default;
};

struct FlowNetworkOptions {
  RoutePolicy routing = RoutePolicy::RAIL_ALIGNED;
};

class FlowNetwork final : public Model, private EventHandler {
 public:
  FlowNetwork(Simulation& sim, const Topology& topology, FlowNetworkOptions options = {});
  ~FlowNetwork() override;
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Routing (cached; see router.hpp).
  Route route(VertexId src, VertexId dst, std::uint32_t path_hint = 0) { return router_.route(src, dst, path_hint); }
  Router& router() { return router_; }
  const Topology& topology() const { return topology_; }
  Simulation& simulation() { return sim_; }

  // Starts a transfer of `bytes` from src to dst on the router's route. Endpoints are devices
  // (GPU, NIC, host memory, CPU socket, PCIe switch, NVSwitch), never network switches.
  FlowId transfer(VertexId src, VertexId dst, Bytes bytes, OnFlowComplete on_complete = {},
                  const FlowOptions& options = {});
  // Starts a transfer along an explicit route: link ids in order, each starting where the previous
  // one ended, passing through no network switch twice, not starting or ending at one
  // (std::invalid_argument otherwise). Routes may be concatenations (GPU -> host memory -> GPU).
  FlowId transfer(const Route& route, Bytes bytes, OnFlowComplete on_complete = {}, const FlowOptions& options = {});

  // Many transfers at once, all reporting to one handler (rates are recomputed once for all).
  struct BulkTransfer {
    VertexId src = NO_VERTEX;
    VertexId dst = NO_VERTEX;
    const Route* route = nullptr;  // when set, used instead of routing src -> dst
    Bytes bytes;
    FlowOptions options;
  };
  void transfer_many(std::span<const BulkTransfer> transfers, FlowHandler& handler, std::vector<FlowId>* ids = nullptr);

  // The observer told of each recomputation of rates (nullptr: none). It changes no result.
  void set_rate_observer(RateObserver* observer) { rate_observer_ = observer; }

  // Stops a flow without calling its completion; false when it was already gone.
  bool cancel(FlowId id);

  FlowState state(FlowId id) const;
  // The flow's current rate (0 while latent or not yet rated, or when gone).
  Bandwidth rate(FlowId id) const;
  // Bytes the flow still has to move at the current time (0 when gone).
  Bytes remaining(FlowId id) const;

  std::size_t flows_in_flight() const { return in_flight_; }
  std::uint64_t flows_completed() const { return completed_count_; }
  // Bytes carried, busy and saturated time, load and flow count of a link, up to now.
  LinkUsage link_usage(LinkId link) const;
  // The `count` links that spent the most time saturated (then: most bytes; then: lowest id).
  std::vector<LinkId> busiest_links(std::size_t count) const;
  const SolverCounters& solver_counters() const { return solver_.counters(); }
  const MaxMinSolver& solver() const { return solver_; }
  // Bytes held by the flow state: the solver's tables and the network's per-flow arrays.
  std::size_t memory_bytes() const;

  std::string_view model_name() const override { return "flow network"; }
  void describe_unfinished(std::vector<std::string>& out) const override;

 private:
  enum : std::uint8_t { FREE = 0, LATENT = 1, ACTIVE = 2, FINISHING = 3 };  // FINISHING: done, callback pending
  // Per flow slot, what a rate change reads and writes: 16 bytes, four to a cache line, never
  // across two.
  struct Progress {
    double left = 0;  // bytes left at last_ps
    std::int64_t last_ps = 0;
  };
  static_assert(sizeof(Progress) == 16);
  // Per flow slot, the rest.
  struct alignas(64) FlowRecord {  // one cache line per slot: a completion reads one line
    std::int64_t start_ps = 0;
    std::int64_t bytes = 0;
    double cap = 0;
    FlowHandler* handler = nullptr;
    std::uint64_t tag = 0;
    std::uint64_t seq = 0;  // start order: breaks ties between equal times (looked up only then)
    std::uint32_t generation = 0;
    std::uint32_t function = UINT32_MAX;      // index in functions_, or none
    std::uint32_t latent_route = UINT32_MAX;  // its links' block in route_pool_ while latent
    std::uint8_t state = FREE;
    std::uint8_t latent_hops = 0;  // the number of those links
  };
  static_assert(sizeof(FlowRecord) == 64);
  // Heaps of flow slots by time (picoseconds), equal times in start order: the times compared
  // without a branch, the sequence looked up only when they are equal (IndexedHeap picks its least
  // child by arithmetic on the results).
  struct StartOrder {
    const std::vector<FlowRecord, CacheLineAllocator<FlowRecord>>* records;
    bool operator()(std::int64_t a, std::uint32_t a_slot, std::int64_t b, std::uint32_t b_slot) const {
      bool lt = a < b;
      if (a == b) [[unlikely]] lt = (*records)[a_slot].seq < (*records)[b_slot].seq;
      return lt;
    }
  };
  using TimeHeap = IndexedHeap<std::int64_t, 4, StartOrder>;

  void handle_event(Simulation& sim, std::uint64_t tag) override;
  void process_due(Simulation& sim);
  TimePoint next_time() const;
  // Twice per transfer: the test inline, the messages built out of line.
  void check_endpoint(VertexId v) const {
    if (v >= topology_.vertex_count()) [[unlikely]] endpoint_error(v);
    const VertexKind k = topology_.vertices()[v].kind;
    if (k == VertexKind::LEAF_SWITCH || k == VertexKind::SPINE_SWITCH) [[unlikely]] endpoint_error(v);
  }
  [[noreturn, gnu::noinline, gnu::cold]] void endpoint_error(VertexId v) const;
  void check_route(const Route& route) const;
  // `latency`: the route's (Router::latency).
  FlowId start(const Route& route, Duration latency, Bytes bytes, FlowHandler* handler, FlowFunction fn,
               const FlowOptions& options);
  std::uint32_t allocate_slot();
  // Once per completion: inline (defined in flow_network.cpp, the only file that calls it).
  [[gnu::always_inline]] inline void release_slot(std::uint32_t slot);
  bool live(FlowId id) const;
  void activate(std::uint32_t slot, std::span<const LinkId> route);
  // The route of a flow in its start latency, and the end of its keeping.
  std::span<const LinkId> latent_links(std::uint32_t slot) const {
    return {route_pool_.at(flows_[slot].latent_route), flows_[slot].latent_hops};
  }
  void release_latent_route(std::uint32_t slot);
  void activate_latent(std::uint32_t slot);
  void finish(std::uint32_t slot);
  void apply_rate_changes();
  // Asks the memory for what the next completion and the next end of latency will touch, in
  // three stages so that each reads only what the one before brought in.
  void prefetch_next(int stage) const;
  double moved(std::uint32_t slot) const;
  void arm(TimePoint t);
  void rearm();

  Simulation& sim_;
  const Topology& topology_;
  Router router_;
  MaxMinSolver solver_;

  std::vector<FlowRecord, CacheLineAllocator<FlowRecord>> flows_;  // by slot
  std::vector<Progress, CacheLineAllocator<Progress>> progress_;  // by slot
  std::vector<std::uint32_t> free_slots_;

  std::vector<FlowFunction> functions_;
  std::vector<std::uint32_t> free_functions_;
  BlockPool<LinkId> route_pool_;  // the routes of flows in their start latency

  TieredHeap<StartOrder> completions_{StartOrder{&flows_}};  // active flows by predicted completion
  TimeHeap latent_{StartOrder{&flows_}};       // flows in their start latency, by its end
  std::vector<FlowId> ready_;     // flows started with no latency, waiting for the event at now
  std::size_t ready_head_ = 0;
  std::vector<std::uint32_t> finished_;
  EventId wake_;
  TimePoint wake_time_ = TimePoint::max();
  bool in_event_ = false;
  RateObserver* rate_observer_ = nullptr;
  std::uint64_t next_seq_ = 0;
  std::size_t in_flight_ = 0;
  std::uint64_t completed_count_ = 0;
};

}  // namespace clustersim::sim
