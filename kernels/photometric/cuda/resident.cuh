// photometric.cu's resident kernel: a uint8 image held in shared memory (half of it a block,
// in clusters of two, on Hopper and newer) from its copy to its stores, and its launch.
// Included by photometric.cu alone.
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_pipeline.h>

#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/overlapped_launch.cuh"
#include "kernels/photometric/cuda/block.cuh"
#include "kernels/photometric/cuda/pixels.cuh"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::cuda::photometric_impl {
namespace {

using namespace gpuaug::photo;

// Resident images: with a reduction stage, one block per image whose pixels fit in the block's
// shared memory (a 224x224 RGB uint8 image takes 147 KiB) copies the image there once, takes its
// pixels to the reduction step in place, combines the image's statistics itself and resumes from
// shared memory: the image is read once, nothing is staged in global memory, and there is no second
// kernel (photometric.cu's two-pass kernels read the image twice and write and read the staged
// pixels). On Hopper and newer an image is split between a cluster of two blocks, each holding half
// of it, which combine their statistics through distributed shared memory: two blocks then share an
// SM, one computing while the other waits at a barrier or on its stores, which is faster than a
// block per whole image. Each thread only ever touches
// its own runs, so the copies need no barrier. uint8 only, where the statistics are exact (integer
// sums, extremes, counts, in float32 per thread): the same results as the two-pass kernels',
// whichever the launch picks. Up to kResidentThreads an SM, 72 registers each (at 64 the kernel
// spilled), as many as give every thread the same number of runs but for the last few threads (half
// a 224x224 image's 6272 runs of 8 pixels: 448 threads 7 each).
constexpr int kResidentThreads = 896;

// Waits for this thread's copies of a chunk, `later` chunks' copies being committed after it
// (cp.async.wait_group takes an immediate: past the largest here, it waits for more than needed).
__device__ __forceinline__ void wait_for_chunk(int64_t later) {
  switch (later) {
    case 0: __pipeline_wait_prior(0); break;
    case 1: __pipeline_wait_prior(1); break;
    case 2: __pipeline_wait_prior(2); break;
    case 3: __pipeline_wait_prior(3); break;
    case 4: __pipeline_wait_prior(4); break;
    case 5: __pipeline_wait_prior(5); break;
    case 6: __pipeline_wait_prior(6); break;
    default: __pipeline_wait_prior(7); break;
  }
}

template <int C, typename T, int V, bool Interleaved, bool Halves>
__device__ __forceinline__ Runs<T, C, V, Interleaved> resident_runs(const T* pixels, int64_t plane,
                                                                    int64_t q0) {
  Runs<T, C, V, Interleaved> r;
  if constexpr (Interleaved && Halves) {  // pairs (kRunPairs): 2 C bytes each, 2-byte aligned
    constexpr int kHalfWords = C * V / 2;
    uint32_t halves[kHalfWords];
#pragma unroll
    for (int h = 0; h < kHalfWords; ++h) {
      const int pair = h / C, at = h % C;  // a pair's C 16-bit halves
      halves[h] = reinterpret_cast<const uint16_t*>(pixels + (q0 + kPairGap * pair) * C)[at];
    }
#pragma unroll
    for (int w = 0; w < kHalfWords / 2; ++w) {
      r.run[w / (V / 4)].u32[w % (V / 4)] = __byte_perm(halves[2 * w], halves[2 * w + 1], 0x5410u);
    }
  } else {
#pragma unroll
    for (int k = 0; k < C; ++k) {
      r.run[k] = read_run<T, V, Halves>(pixels + r.offset(0, plane, q0, k));
    }
  }
  return r;
}

// The blocks of an image's cluster (Hopper and newer) exchange their statistics by pushing them
// into each other's shared memory (st.async), each block's barrier `arrived` (an mbarrier)
// counting the bytes that reach it: no fence. cluster.sync() here took a GPU-scope fence
// (MEMBAR.ALL.GPU) twice, which waited on the SM's outstanding stores, the other resident block's
// included.
constexpr int kMaxSplit = 2;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Thread 0: the barrier, visible to the cluster once every thread has arrived at the cluster's
// barrier (cluster_arrive, before the block's first wait there).
__device__ __forceinline__ void init_exchange(uint64_t* arrived) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(arrived)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// The address of `p`'s counterpart in block `rank` of the cluster.
__device__ __forceinline__ uint32_t address_in(unsigned rank, const void* p) {
  uint32_t remote;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(shared_address(p)), "r"(rank));
  return remote;
}

// One thread: the bytes the other blocks send this block's barrier `arrived`; then every caller
// waits for the barrier's first phase, which completes once they have all landed.
__device__ __forceinline__ void expect_bytes(uint64_t* arrived, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               ::"r"(shared_address(arrived)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void wait_for_bytes(uint64_t* arrived) {
  for (unsigned done = 0; !done;) {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(shared_address(arrived))
        : "memory");
  }
}
#endif

// Each image's statistics from its cluster's blocks' (`split` of them, each holding a part of the
// image), combined in rank order by every block: the same bits in each, and on every run. Every
// thread of the block calls it, after cluster_arrive; `block` is this block's, written by the
// same threads (block_stats), `image` receives the image's.
__device__ __forceinline__ void combine_cluster_stats(int kind, int split, const double* block,
                                                      double (&ranks)[kMaxSplit][kStats],
                                                      uint64_t* arrived, double* image) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cluster_wait();  // every block's barrier is initialised
  if (threadIdx.x >= kStats) return;
  const unsigned rank = cluster_rank();
  const int i = threadIdx.x;
  ranks[rank][i] = block[i];
  for (unsigned other = 0; other < static_cast<unsigned>(split); ++other) {
    if (other == rank) continue;
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];"
                 ::"r"(address_in(other, &ranks[rank][i])), "l"(__double_as_longlong(block[i])),
                 "r"(address_in(other, arrived))
                 : "memory");
  }
  if (i == 0) expect_bytes(arrived, (split - 1) * kStats * static_cast<int>(sizeof(double)));
  wait_for_bytes(arrived);  // every other rank's values
  double total = initial_stat(kind, i);
  for (int r = 0; r < split; ++r) total = combine_stat(kind, i, total, ranks[r][i]);
  image[i] = total;
#endif
}

// Equalize's counts likewise, for a cluster of two: each block pushes its counts into the other's
// histogram `image` (st.async, counted in bytes by `arrived`), then adds its own (integers: any
// order). cluster.sync() before and after reading the other block's counts stalled the kernel on
// their fences. Every thread calls it,
// after cluster_arrive and a barrier after the block's last count; a barrier must follow before
// `image` is read.
__device__ __forceinline__ void combine_cluster_counts(const unsigned int* block,
                                                       uint64_t* arrived, int64_t* image,
                                                       int values) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(kMaxSplit == 2, "one other block writes each value of `image`");
  cluster_wait();  // the other block's barrier is initialised
  const unsigned other = cluster_rank() ^ 1u;
  for (int i = threadIdx.x; i < values; i += blockDim.x) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];"
                 ::"r"(address_in(other, image + i)), "l"(static_cast<int64_t>(block[i])),
                 "r"(address_in(other, arrived))
                 : "memory");
  }
  if (threadIdx.x == 0) expect_bytes(arrived, values * static_cast<int>(sizeof(int64_t)));
  wait_for_bytes(arrived);
  for (int i = threadIdx.x; i < values; i += blockDim.x) image[i] += block[i];
#endif
}

// Whether contrast step s may take its values as their bits, 2^23 + v (contrast_of_bits): its
// factor a is finite, and 2^23 a too.
template <typename P>
__device__ __forceinline__ bool contrast_from_bits(const Step<P>& s) {
  return s.kind == kContrast && fabsf(s.a) <= 0x1p100f;
}

// Contrast on pixels just read (the element-wise pass's first step, where the reduction is
// contrast): each value's product v a from its bits 2^23 + v by one multiply-add with -2^23 a,
// whose exact sum is v a, rounded once as v * a is, instead of a subtraction of 2^23 and a
// multiply (sm_90: three instructions a pixel fewer), then _blend's sum with the mean as
// apply_step's.
template <int C, typename R, typename P, int V>
__device__ __forceinline__ void contrast_of_bits(const R& runs, const Step<P>& s, P mean,
                                                 P (&x)[V][3]) {
  const float unbias = -8388608.0f * s.a;  // exact: a power of two times a finite a
  const auto blend = [&](auto in_range) {
#pragma unroll
    for (int j = 0; j < V; ++j)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int f = runs.flat(c, j);
        const float product = __fmaf_rn(biased_element<V>(runs.run[f / V], f % V), s.a, unbias);
        const float sum = __fmaf_rn(mean, s.b, product);
        x[j][c] = decltype(in_range)::value ? trunc_small(sum) : saturated_u8(sum);
      }
  };
  if (s.unit) {
    blend(std::true_type{});
  } else {
    blend(std::false_type{});
  }
}

// A block of `split` (a cluster of them where split > 1, Hopper and newer) takes an equal part
// of its image's runs, blockIdx.x % split the part: parts of half an image let two blocks share
// an SM, so that one computes while the other waits on its barrier or its stores. `program` and
// `rows` are __grid_constant__, read where they lie rather than copied (fewer instructions).
// JitterKinds: the program's stages are all jitter kinds (is_jitter_kind), its reduction
// contrast, and the kernel holds their code alone, whose fetches and register allocation the
// warps feel (the uint8 -> float32 kernel has about a third fewer instructions so). Instructions
// saved by adding code did not pay.
template <int C, typename T, typename out_t, typename P, int V, bool Interleaved, bool Halves,
          bool JitterKinds>
__global__ void __launch_bounds__(kResidentThreads, 1)
    resident_transform(const T* in, out_t* out, Geometry g,
                       const __grid_constant__ Program program,
                       const __grid_constant__ Rows<P> rows, Output<P> o, int split) {
  using R = Runs<T, C, V, Interleaved>;
  extern __shared__ __align__(16) unsigned char resident_image[];
  T* pixels = reinterpret_cast<T*>(resident_image);
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> reduced;
  __shared__ double block_totals[kStats], totals[kStats], rank_totals[kMaxSplit][kStats];
  __shared__ alignas(8) uint64_t totals_arrived;
  __shared__ unsigned int counts[3 * kBins];
  __shared__ int64_t histogram[3 * kBins];
  __shared__ uint8_t table[3 * kBins];
  const int64_t image = blockIdx.x / split;
  const int64_t image_base = image * C * g.pixels, in_base = image * g.in_image_step;
  const int64_t part_pixels = ceil_div(g.pixels / V, int64_t{split}) * V;  // the plane's stride
  const int64_t begin = blockIdx.x % split * part_pixels;
  const int64_t pixels_here = ::min(part_pixels, g.pixels - begin);  // > 0: see the launch
  const int64_t chunk_pixels = int64_t{blockDim.x} * V;
  const int64_t chunks = ceil_div(pixels_here, chunk_pixels);
  // q: a pixel's index in the block's part (Halves: every warp's lie in it, see the launch).
  // Spelled here: as a helper function it changed nvcc's code for the steps (copies at each case
  // of apply_step's switch, a slower kernel).
  const auto first_pixel = [&](int64_t chunk) -> int64_t {  // see kRunHalves, kRunPairs
    constexpr int kStep = kLanePixels<V, Interleaved, Halves>;
    static_assert(!Interleaved || !Halves || 32 * kStep == kPairGap);
    return chunk * chunk_pixels + threadIdx.x / 32 * (32 * V) + threadIdx.x % 32 * kStep;
  };
  // Each thread copies V consecutive pixels, which with Halves belong to two lanes of its warp:
  // their reads follow a __syncwarp after the wait (lane_copies_landed).
  const auto copy_chunk = [&](int64_t chunk) {  // a group per chunk
    const int64_t q0 = chunk * chunk_pixels + threadIdx.x * V;
    if (q0 < pixels_here) {
#pragma unroll
      for (int k = 0; k < C; ++k) {
        __pipeline_memcpy_async(pixels + R().offset(0, part_pixels, q0, k),
                                in + R().offset(in_base, g.in_channel_step, begin + q0, k),
                                sizeof(Vec<T, V>));
      }
    }
    __pipeline_commit();
  };
  const auto lane_copies_landed = [] {
    if constexpr (Halves) __syncwarp();
  };
  // Launched overlapped on Hopper (launch_clustered): the next kernel's blocks may take the
  // slots this one's leave, and this one's blocks set up shared memory while the previous kernel
  // drains, touching global memory only once it has completed.
  allow_next_grid();
  for (int i = threadIdx.x; i < 3 * kBins; i += blockDim.x) counts[i] = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (split > 1 && threadIdx.x == 0) init_exchange(&totals_arrived);
#endif
  wait_for_previous_grid();
  // The first chunk alone, the others once it has landed: with all its copies in flight together
  // a block waited longer for its first chunk.
  copy_chunk(0);
  const int kind = JitterKinds ? int{kContrast} : program.reduction;
  decode_block_program(prog, program, rows, image / g.frames);
  __syncthreads();
  __pipeline_wait_prior(0);  // its first chunk; then its others, in order (wait_for_chunk)
  for (int64_t chunk = 1; chunk < chunks; ++chunk) copy_chunk(chunk);
  // bits_contrast: the first step is contrast, taken from the values' bits (contrast_of_bits)
  const auto finish_pixels = [&](int64_t q0, int first_step, bool bits_contrast) {
    P x[V][3];
    const R runs = resident_runs<C, T, V, Interleaved, Halves>(pixels, part_pixels, q0);
    if (bits_contrast) {
      contrast_of_bits<C>(runs, prog.steps[first_step], reduced.mean, x);
    } else {
      unpack_pixels<C, T, P, V, true, Interleaved>(runs, pixels, g, 0, part_pixels, q0, x);
    }
    run_steps<C, T, JitterKinds>(prog, first_step + bits_contrast, prog.count, x, reduced);
    // streaming stores: the output passes through L2 once. Interleaved, the warp stages them
    // where its pixels were.
    constexpr int kStep = kLanePixels<V, Interleaved, Halves>;
    store_pixels<C, T, out_t, P, V, true, Interleaved, true, Halves, 32 * C * V * int{sizeof(T)}>(
        out, g, image_base, begin + q0, x, o, pixels + (q0 - threadIdx.x % 32 * kStep) * C,
        begin + pixels_here);
  };
  if (prog.reduce_at < 0) {  // the sample skips its reduction stage: one pass, as chunks land
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      wait_for_chunk(chunks - 1 - chunk);
      lane_copies_landed();
      if (first_pixel(chunk) < pixels_here) finish_pixels(first_pixel(chunk), 0, false);
    }
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (split > 1) cluster_arrive();  // this block's barriers are initialised (see cluster_wait)
#endif
  P stats[kStats];
#pragma unroll
  for (int i = 0; i < kStats; ++i) stats[i] = static_cast<P>(initial_stat(kind, i));
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    wait_for_chunk(chunks - 1 - chunk);
    lane_copies_landed();
    const int64_t q0 = first_pixel(chunk);
    if (q0 >= pixels_here) continue;
    P x[V][3];
    unpack_pixels<C, T, P, V, true, Interleaved>(
        resident_runs<C, T, V, Interleaved, Halves>(pixels, part_pixels, q0), pixels, g, 0,
        part_pixels, q0, x);
    run_steps<C, T, JitterKinds>(prog, 0, prog.reduce_at, x, reduced);
    if (prog.reduce_at > 0) {  // kept in place for the steps after the reduction, as words
#pragma unroll
      for (int k = 0; k < C; ++k) {
        using Word = typename Chunk<T, V>::Word;
        Chunk<T, V> run;
#pragma unroll
        for (int w = 0; w < V / 4; ++w) run.u32[w] = u8_word<T, C, V, Interleaved>(x, k, w);
        T* at = pixels + R().offset(0, part_pixels, q0, k);
        if constexpr (Interleaved && Halves) {  // pairs: the 16-bit halves where they were read
#pragma unroll
          for (int e = 0; e < V / 2; ++e) {
            const int h = k * (V / 2) + e, pair = h / C;  // the run's e-th half of the thread's
            reinterpret_cast<uint16_t*>(pixels + (q0 + kPairGap * pair) * C)[h % C] =
                static_cast<uint16_t>(run.u32[e / 2] >> (16 * (e % 2)));
          }
        } else if constexpr (Halves) {  // half the words at each half
#pragma unroll
          for (int w = 0; w < V / 8; ++w) {
            reinterpret_cast<uint32_t*>(at)[w] = run.u32[w];
            reinterpret_cast<uint32_t*>(at + kRunGap<V, true>)[w] = run.u32[V / 8 + w];
          }
        } else {
#pragma unroll
          for (int i = 0; i < Chunk<T, V>::kWords; ++i) reinterpret_cast<Word*>(at)[i] = run.w[i];
        }
      }
    }
    if (kind == kContrast) {
      P grays = 0;
#pragma unroll
      for (int j = 0; j < V; ++j) grays += contrast_gray<C, T>(x[j]);
      stats[0] += grays;
    } else if (kind == kEqualize) {
#pragma unroll
      for (int j = 0; j < V; ++j)
#pragma unroll
        for (int c = 0; c < C; ++c) atomicAdd(&counts[c * kBins + equalize_bin<T>(x[j][c])], 1u);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
#pragma unroll
        for (int c = 0; c < C; ++c) {  // autocontrast's extremes (uint8: no NaN)
          stats[c] = fminf(stats[c], x[j][c]);
          stats[3 + c] = fmaxf(stats[3 + c], x[j][c]);
        }
    }
  }
  if (kind == kEqualize) {
    __syncthreads();
    if (split > 1) {
      combine_cluster_counts(counts, &totals_arrived, histogram, 3 * kBins);
    } else {
      for (int i = threadIdx.x; i < 3 * kBins; i += blockDim.x) histogram[i] = counts[i];
    }
    __syncthreads();
    for (int c = threadIdx.x / 32; c < C; c += blockDim.x / 32) {
      warp_equalize_table(histogram + c * kBins, table + c * kBins);
    }
    if (threadIdx.x == 0) reduced.table = table;
  } else {
    double thread_stats[kStats];
#pragma unroll
    for (int i = 0; i < kStats; ++i) thread_stats[i] = stats[i];
    block_stats<kResidentThreads>(kind, thread_stats, split > 1 ? block_totals : totals);
    __syncthreads();
    if (split > 1) {
      combine_cluster_stats(kind, split, block_totals, rank_totals, &totals_arrived, totals);
      __syncthreads();
    }
    if (threadIdx.x == 0) reduced = finish_reduction<T, P>(kind, totals, g.pixels);
  }
  __syncthreads();
  const bool bits_contrast = contrast_from_bits(prog.steps[prog.reduce_at]);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    if (first_pixel(chunk) < pixels_here) {
      finish_pixels(first_pixel(chunk), prog.reduce_at, bits_contrast);
    }
  }
}

// The shared memory a resident image may take on the current device (the block's opt-in limit
// less the kernel's own), set as the kernel's limit on first use there.
template <typename Kernel>
int resident_bytes(Kernel kernel) {
  cudaFuncAttributes attributes;
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  const int bytes = static_cast<int>(at::cuda::getCurrentDeviceProperties()->sharedMemPerBlockOptin -
                                     attributes.sharedSizeBytes);
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return bytes;
}

// cudaOccupancyMaxActiveBlocksPerMultiprocessor for the kernel, remembered per device and launch
// shape: the launch path asks on every call, and the query walks the kernel's attributes.
template <typename Kernel>
int resident_blocks_per_sm(Kernel kernel, int threads, int64_t bytes) {
  static std::mutex mutex;
  static std::map<std::tuple<c10::DeviceIndex, int, int64_t>, int> known;  // a few image sizes
  const auto key = std::make_tuple(c10::cuda::current_device(), threads, bytes);
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(key);
  if (found == known.end()) {
    int per_sm = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads,
                                                                 static_cast<size_t>(bytes)));
    found = known.emplace(key, per_sm).first;
  }
  return found->second;
}

// Whether `blocks` blocks keep the GPU busy: at least 80% of the SMs' slots (`per_sm` blocks
// each) in their waves (the two-pass kernels spread any batch over every SM), in one launch's grid.
bool resident_fills_gpu(int64_t blocks, int per_sm) {
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t slots = sms * per_sm;
  return per_sm > 0 && blocks <= std::numeric_limits<int32_t>::max() &&
         blocks * 5 >= ceil_div(blocks, slots) * slots * 4;
}

// kernel<<<blocks, threads, bytes, stream>>>(args...), with Hopper's code in clusters of `split`
// blocks (a resident image's parts, sharing its statistics: 2, else 1) and launched overlapped
// (overlapped_launch.cuh).
template <typename Kernel, typename... Args>
void launch_clustered(Kernel kernel, bool hopper, int64_t blocks, int64_t threads, int64_t bytes,
                      int split, cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attributes[2];
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = split;
  attributes[0].val.clusterDim.y = 1;
  attributes[0].val.clusterDim.z = 1;
  attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attributes[1].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = bytes;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = hopper ? 2 : 0;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

}  // namespace
}  // namespace gpuaug::cuda::photometric_impl
