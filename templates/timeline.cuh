// Per-block timestamps of a kernel's phases, for finding where a kernel's fixed cost goes
// (launch, dependency wait, first fill, last drain) where the profiler's counters sum over
// the kernel. Compiled in only with APNN_TIMELINE set (compiler/nvrtc_compiler.cpp defines
// it, and the option is part of the cache key); without it every hook is empty.
// `apnn verify --timeline` points apnn_timeline at a buffer before timing, reads the records
// back and summarizes them (engine/timeline.cpp).
//
// A block takes the next record of a ring at entry (one atomic), leaves its index in shared
// memory for its other threads, and writes %globaltimer (ns, the same clock on every SM) at each event it
// reaches; %gridid tells the launches apart. Thread 0 also counts its SM cycles in full-stage
// waits and epilogues (TimelineCycles) and adds them to the record at the end.
#pragma once
#include "apnn_types.cuh"

namespace apnn {

// The events, in a block's order (the TMA core's; engine/timeline.h names them too).
enum TimelineEvent : int {
  kTlEntry = 0,        // the block starts
  kTlDepWait = 1,      // past the cluster's first sync and the wait for the previous kernel
  kTlFirstCopy = 2,    // the producer issues its first copy
  kTlFirstFull = 3,    // the consumers' first stage has landed
  kTlFirstPatch = 4,   // the first patch's mainloop is done
  kTlLastPatch = 5,    // the last patch's mainloop is done
  kTlStored = 6,       // the last output stores have completed
  kTlExit = 7,         // past the cluster's last sync
  kTlEvents = 8
};

struct TimelineRecord {  // 112 bytes: engine/timeline.h mirrors it
  unsigned long long grid;
  unsigned block, smid;
  unsigned long long t[kTlEvents];
  // Thread 0's cycle account (TimelineCycles): its patches, SM cycles from the consumer loop's
  // start to its end, and of those, cycles spent waiting for full stages and in epilogues.
  unsigned patches, unused;
  unsigned long long consumer_cycles, wait_cycles, epilogue_cycles;
};

}  // namespace apnn

#ifdef APNN_TIMELINE
extern "C" {
__device__ apnn::TimelineRecord* apnn_timeline;  // the host's buffer, or null: record nothing
__device__ unsigned apnn_timeline_capacity;
__device__ unsigned apnn_timeline_count;
}

namespace apnn {

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 at the block's start, before a block-wide (or cluster-wide) barrier: takes a
// record and leaves its index in the shared-memory word at slot_addr (a spare word of the
// kernel's own layout: no static shared memory, which would count against the kernel's).
__device__ __forceinline__ void timeline_begin(u32 slot_addr) {
  const unsigned long long t = global_ns();
  unsigned slot = ~0u;
  if (apnn_timeline != nullptr) {
    slot = atomicAdd(&apnn_timeline_count, 1u) % apnn_timeline_capacity;  // a ring: the last launches stay
    {
      TimelineRecord& r = apnn_timeline[slot];
      unsigned long long grid;
      unsigned smid;
      asm volatile("mov.u64 %0, %%gridid;" : "=l"(grid));
      asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
      r.grid = grid;
      r.block = blockIdx.x;
      r.smid = smid;
      r.t[kTlEntry] = t;
#pragma unroll
      for (int e = 1; e < kTlEvents; ++e) r.t[e] = 0;
      r.patches = r.unused = 0;
      r.consumer_cycles = r.wait_cycles = r.epilogue_cycles = 0;
    }
  }
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(slot_addr), "r"(slot) : "memory");
}

// The block's record (the index timeline_begin left at slot_addr), or null where the host
// armed no buffer. Any thread, after the barrier that follows timeline_begin.
__device__ __forceinline__ TimelineRecord* timeline_record(u32 slot_addr) {
  unsigned slot;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(slot) : "r"(slot_addr) : "memory");
  return slot != ~0u ? &apnn_timeline[slot] : nullptr;
}

__device__ __forceinline__ void timeline_mark(u32 slot_addr, int event) {
  if (TimelineRecord* r = timeline_record(slot_addr)) r->t[event] = global_ns();
}

// A consumer thread's SM cycles: waiting for full stages (begin .. wait_end) and in
// epilogues (begin .. epilogue_end, one a patch), out of the whole consumer loop
// (construction .. write). Where a patch's time goes between the MMAs, the operands' arrival
// and the output, per patch rather than per launch (session 22: w1a2 128x192 spends a fifth
// of its patches in the epilogue, bench/NOTES.md).
struct TimelineCycles {
  long long start = clock64(), mark = 0, wait = 0, epilogue = 0;
  unsigned patches = 0;
  __device__ __forceinline__ void begin() { mark = clock64(); }
  __device__ __forceinline__ void wait_end() { wait += clock64() - mark; }
  __device__ __forceinline__ void epilogue_end() {
    epilogue += clock64() - mark;
    ++patches;
  }
  // Thread 0, after the loop: into the block's record.
  __device__ __forceinline__ void write(u32 slot_addr) const {
    TimelineRecord* r = timeline_record(slot_addr);
    if (r == nullptr) return;
    r->patches = patches;
    r->consumer_cycles = static_cast<unsigned long long>(clock64() - start);
    r->wait_cycles = static_cast<unsigned long long>(wait);
    r->epilogue_cycles = static_cast<unsigned long long>(epilogue);
  }
};

}  // namespace apnn
#define APNN_TIMELINE_BEGIN(slot_addr) ::apnn::timeline_begin(slot_addr)
#define APNN_TIMELINE_MARK(slot_addr, event) ::apnn::timeline_mark(slot_addr, event)
#else
#define APNN_TIMELINE_BEGIN(slot_addr) ((void)0)
#define APNN_TIMELINE_MARK(slot_addr, event) ((void)0)
namespace apnn {
struct TimelineCycles {  // without APNN_TIMELINE: no code
  __device__ __forceinline__ void begin() {}
  __device__ __forceinline__ void wait_end() {}
  __device__ __forceinline__ void epilogue_end() {}
  __device__ __forceinline__ void write(u32) const {}
};
}  // namespace apnn
#endif
