// The vLLM code each engine's scheduler transcribes, in one place. Every citation in scheduler/
// ("vLLM _schedule_running", "Scheduler.schedule") is of these revisions unless it names another;
// ../shared/vllm-oracle runs exactly this code, and tests/test_oracle_*.cpp replay it step by step.
//  - V0 (policies vllm-v0 and chunked): vLLM v0.8.5 (cfe453209, 2025-04-28), vllm/core/scheduler.py
//    and vllm/core/block_manager.py; the rules cited are the same in v0.6.3 (fd47e57f4), the
//    oracle's other V0 revision, except where a comment says "v0.8".
//  - V1 (policy vllm-v1): vLLM 9aaf83ef5 (2026-05-19), vllm/v1/core/sched/scheduler.py,
//    vllm/v1/core/kv_cache_manager.py, vllm/v1/core/block_pool.py and vllm/v1/request.py. It is
//    newer than release v0.15.1, which the ground-truth servers of ../shared/groundtruth ran; a
//    rule is not claimed for an older release unless a comment names one.
#pragma once

namespace servesim {

inline constexpr const char* kVllmV0Revision = "v0.8.5 (cfe453209)";
inline constexpr const char* kVllmV1Revision = "9aaf83ef5 (2026-05-19)";

}  // namespace servesim
