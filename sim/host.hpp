// Host: one serving replica (a GPU or a tensor-parallel group) running vLLM's engine loop: while
// there is work, ask the scheduler for a batch, ask the cost model how long it runs, and when the
// step completes apply it (tokens computed, first token at the end of the step that computes the
// last prompt token, one token per decode step, finish at the last output token, blocks freed).
// Requests arriving during a step wait for the next scheduling decision, as in vLLM.
// Promises: it never idles while its scheduler holds work; a scheduler that can make no progress
// is reported (std::logic_error), never looped on.
#pragma once

#include <cassert>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "models/cost_model.hpp"
#include "models/lora.hpp"
#include "scheduler/scheduler.hpp"
#include "sim/event_loop.hpp"
#include "sim/lora_manager.hpp"
#include "sim/metrics.hpp"
#include "traces/request.hpp"

namespace servesim {

// What a replica does for the requests routed to it: all of each (colocated), only the prompt
// and first token (a disaggregated prefill instance: vLLM's proxy sends it with max_tokens 1),
// or the rest once the prompt's KV has arrived (a decode instance).
enum class ReplicaRole : uint8_t { kColocated, kPrefill, kDecode };

class Host final : public EventLoop::Process {
 public:
  // Told when a request leaves the replica: finished (its last token) or rejected on arrival.
  class Listener {
   public:
    virtual void on_request_done(uint32_t id) = 0;
    // A prefill instance computed request ID's prompt (its KV is ready to send).
    virtual void on_prefill_done(uint32_t id) { on_request_done(id); }
    // Replica REPLICA (the host's index) starts or ends an event (an arrival, a step's end, a
    // wake): its waiting requests and KV usage may change in between, and not outside.
    virtual void on_load_change(uint32_t /*replica*/) {}

   protected:
    ~Listener() = default;
  };

  // LISTENER may be null. In a fleet, FLEET (the fleet's collector, over every replica) is told
  // everything METRICS is, by workload id, while the scheduler and METRICS number the replica's
  // requests 0, 1, ... as they reach it; GLOBAL_OF (kept up to date here) maps those numbers to
  // workload ids. The listener hears workload ids.
  // ROLE: a prefill instance tells FLEET of arrivals and steps but not of tokens (the client's
  // tokens come from the decode instance), a decode instance of tokens and steps but not of
  // arrivals (the client sent the request to the prefill instance).
  Host(EventLoop& loop, Scheduler& scheduler, const CostModel& cost, MetricsCollector& metrics,
       Listener* listener = nullptr, MetricsCollector* fleet = nullptr,
       std::vector<uint32_t>* global_of = nullptr, ReplicaRole role = ReplicaRole::kColocated,
       uint32_t index = 0)
      : loop_(loop),
        scheduler_(scheduler),
        cost_(cost),
        metrics_(metrics),
        listener_(listener),
        fleet_(fleet),
        global_of_(global_of),
        role_(role),
        index_(index),
        ahead_(scheduler.schedules_ahead()),
        lag_(scheduler.config().async_scheduling && !ahead_),
        stages_(cost.pipeline_stages()) {
    if (stages_ > 1) {
      // The pipeline's loop (pipeline_event) neither schedules ahead nor lags: its batch queue
      // holds a batch a stage.
      assert(!ahead_ && !lag_ && scheduler.config().max_batches_in_flight() == stages_);
      stage_free_s_.assign(size_t(stages_), 0.0);
      stage_work_s_.assign(size_t(2 * stages_ - 1), 0.0);
      done_s_.assign(size_t(scheduler.config().max_batches_in_flight()), 0.0);
    }
  }
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // A request reaches this replica's engine now; the client sent it at SENT_S (<= now: the API
  // server's latency apart), from which its latencies count.
  // REQUIRES: R.id was not added before.
  // With async scheduling, a request arriving while a step runs joins the step after the next,
  // the next being scheduled already.
  void arrive(const RequestSpec& r, double sent_s);
  // Requests waiting to start at this replica (its scheduler's `waiting`).
  size_t waiting() const { return scheduler_.num_waiting(); }
  const Scheduler& scheduler() const { return scheduler_; }
  ReplicaRole role() const { return role_; }
  Scheduler& scheduler() { return scheduler_; }
  void handle(EventLoop& loop, uint32_t tag) override;
  // KV offload (the scheduler's OffloadingConnector): the GPU's link to host memory, per GPU of
  // the TP group and direction, BYTES_PER_S and LATENCY_S per copy (each copy is one DMA job on
  // its direction's stream: vLLM's SingleDirectionOffloadingHandler, FIFO per direction).
  void set_host_link(double bytes_per_s, double latency_s) {
    link_bytes_per_s_ = bytes_per_s;
    link_latency_s_ = latency_s;
  }
  // Bytes copied to and from host memory, per GPU, and the seconds the links were busy.
  double host_link_busy_s() const { return link_busy_s_; }
  // LoRA adapters (vLLM --enable-lora): each step's batch makes its adapters active (LoraManager,
  // with O) and, with KERNELS (null: none, a table model), pays their kernels.
  void enable_lora(std::unique_ptr<LoraKernels> kernels, const LoraManagerOptions& o) {
    lora_kernels_ = std::move(kernels);
    lora_ = std::make_unique<LoraManager>(o);
  }
  const LoraManager* lora() const { return lora_.get(); }
  double lora_kernel_s() const { return lora_kernel_s_; }

 private:
  enum Tag : uint32_t { kWake, kStepDone, kTransferDone, kEngineCall };
  // A batch scheduled and costed, and the state it was scheduled in (for the step's record), with
  // the KV copies its schedule() asked for (started with its step).
  struct Planned {
    StepCost run;
    int64_t used_blocks = 0;
    size_t waiting = 0;
    int64_t cached_tokens = 0;
    std::vector<KvTransfer> transfers;
  };
  // A KV copy on a host link: when it started and will be done.
  struct InFlight {
    double start_s = 0, done_s = 0;
    uint32_t request = 0;
    int32_t tokens = 0;
  };
  // Schedules a batch into P: false when it is empty. OVERLAPPED: its CPU work is done while
  // another step runs on the GPU (async scheduling), so it costs the longer of the two.
  bool plan(Planned& p, bool overlapped);
  // Runs batch B as planned in P, from now.
  void launch(const Planned& p, const Batch& b);
  // Schedules and runs the next step, none being in flight (after idle, or after a step with
  // nothing queued behind it); scheduling ahead, also schedules the one after it.
  // BACK_TO_BACK: it follows the previous step with no idle time.
  void start_steps(bool back_to_back);
  double step_seconds(const StepCost& cost, bool overlapped) const;
  // handle() but for telling the listener of the load change around it.
  void step(uint32_t tag);
  // Refuses a step of SECONDS from now that no physical GPU would take.
  void check_step_seconds(double seconds) const;
  // With nothing scheduled and nothing in flight: std::logic_error if requests remain.
  void check_not_stalled() const;
  // Pipeline parallelism (stages_ > 1): vLLM 0.15.1's EngineCore.step_with_batch_queue with a
  // batch queue of one batch a stage. Each call schedules a batch if requests are unfinished and
  // sends it into the pipeline (its CPU work first, then stage after stage, each stage after the
  // batch before it); it returns to schedule the next while the queue has room and the oldest
  // batch is not done, and otherwise waits for the oldest and applies its output.
  void pipeline_event(uint32_t tag);
  void engine_call();
  void launch_into_pipeline(Planned& p, const Batch& b);
  void finish_step();
  // Starts TRANSFERS now on the host links, each after the copies before it in its direction.
  void start_transfers(const std::vector<KvTransfer>& transfers);
  // The copies done by now: the scheduler is told (the worker's get_finished after a forward
  // pass, or a step without one), and each load's time is recorded.
  void poll_transfers();
  // Idle with copies in flight: wake when the first is done (vLLM keeps stepping without a
  // forward pass to poll them).
  void wake_for_transfers();
  // The LoRA adapters of BATCH: their kernels and loads, added to RUN.
  void add_lora(const Batch& batch, StepCost& run);
  // Adds R to the scheduler (or rejects it) and wakes an idle host. Returns false when rejected.
  bool admit(const RequestSpec& r, double sent_s);
  void admit_deferred(std::vector<std::pair<const RequestSpec*, double>>& requests);

  EventLoop& loop_;
  Scheduler& scheduler_;
  const CostModel& cost_;
  MetricsCollector& metrics_;
  Listener* listener_;
  MetricsCollector* fleet_;
  std::vector<uint32_t>* global_of_;
  ReplicaRole role_;
  uint32_t index_;  // the replica's number in its fleet
  // The workload id of the scheduler's request ID.
  uint32_t global(uint32_t id) const { return global_of_ ? (*global_of_)[id] : id; }
  bool busy_ = false;  // a step runs on the GPU
  bool wake_pending_ = false;
  // vLLM V1 async scheduling with a scheduler that schedules ahead (V1's AsyncScheduler): the
  // step after the running one is scheduled when the running one starts
  // (EngineCore.step_with_batch_queue, batch queue of 2), and QUEUED_ holds it while it is in
  // flight in the scheduler.
  bool ahead_ = false;
  Planned queued_;
  // Async scheduling with a policy that cannot schedule ahead (V0's, on the V1 engine): the
  // engine's lag is emulated, requests that arrived during the running step (and when the
  // client sent them), and during the one before it, joining a step later.
  bool lag_ = false;
  std::vector<std::pair<const RequestSpec*, double>> arrived_during_step_, arrived_before_step_;
  Planned next_;  // start_steps' step (its buffers reused)
  double link_bytes_per_s_ = 0, link_latency_s_ = 0, link_busy_s_ = 0;
  std::deque<InFlight> loads_, stores_;
  bool transfer_wake_pending_ = false;
  std::unique_ptr<LoraKernels> lora_kernels_;
  std::unique_ptr<LoraManager> lora_;
  std::vector<uint16_t> step_loras_;  // the distinct adapters of the step being planned
  double lora_kernel_s_ = 0;
  // Pipeline parallelism: the stages, when each is next free, a step's work per stage and send
  // (CostModel::pipeline_seconds), and when each batch in flight is done, oldest at DONE_HEAD_ (a
  // ring as long as the batch queue; the newest's is when the last stage is next free).
  int stages_ = 1;
  std::vector<double> stage_free_s_, stage_work_s_, done_s_;
  size_t done_head_ = 0;
};

}  // namespace servesim
