// gpuaug::photometric on the GPU. A uint8 batch with a reduction stage whose images each fit in a
// block's shared memory (half an image a block, in clusters of two, on Hopper and newer), and that
// fills the GPU with such blocks, runs as one kernel with each image resident in shared memory
// (resident_transform). Otherwise, with a reduction stage, a reduction kernel writes per-block
// partial statistics of each image at that step (contrast's sum of grays, autocontrast's channel
// minima and maxima), or, for equalize, adds to each image's histograms, from which a small kernel
// makes its tables; it also keeps the pixels as they reach that step (an image-sized buffer), so
// that the element-wise kernel resumes there instead of running the earlier steps again. That
// kernel runs every pixel through its sample's program, each block combining its image's partials
// (in a fixed order: the same bits on every run). Each thread takes V pixels (kVec): 16-byte copies
// per channel plane (or per run of interleaved pixels) where the image is aligned, else per element
// (uint8: 8 pixels, see kVec, or 4 where its planes are 4-byte aligned only). A block's pixels
// belong to one image, and it loops over several chunks of them, copying the next chunk into shared
// memory (cp.async) while it computes this one; its sample's program is decoded into shared memory.
// A program of ColorJitter's and RandomPhotometricDistort's kinds alone on RGB images in runs takes
// builds of these kernels without the other kinds' code (JitterKinds), which run faster.
// The backward (floating images) runs the same reduction for the mean, then, with contrast, a
// reduction of the mean's gradient (each pixel back to its contrast step), then one kernel that
// takes each pixel back through every step (kernels/photometric/grad.h).
// Built with --fmad=false: torchvision rounds after each multiply and add, and so does this file,
// except where torch itself fuses (its add with alpha, spelled std::fma in values.h).
// Its parts: pixels.cuh (a thread's pixels in and out), block.cuh (the
// program's decoding and the statistics), resident.cuh (the resident kernel); here,
// the two-pass kernels, the backward and the launches.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/image_layout.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/per_device.h"
#include "kernels/photometric/cuda/block.cuh"
#include "kernels/photometric/cuda/pixels.cuh"
#include "kernels/photometric/cuda/resident.cuh"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/grad.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::cuda::photometric_impl {
namespace {

using namespace gpuaug::photo;

// Blocks in all, about: a block pays its prologue (decoding its sample's program, combining its
// image's statistics) once for several chunks. A function of the sizes alone, so that statistics
// combine in the same order on every GPU (uint8 chunks also depend on the planes' alignment, see
// kVec: their sums, of integers, are exact in any order). Fewer blocks were slower or no
// faster.
constexpr int64_t kTargetBlocks = 2048;

// Per block, the statistics of the program's reduction stage (contrast's sum of grays,
// autocontrast's channel minima and maxima) over its pixels at their sample's reduction step.
// JitterKinds: the program's stages are all jitter kinds (is_jitter_kind), its reduction contrast.
template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved,
          bool JitterKinds = false>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM<T, V>)
    reduce_stats(const T* in, T* staged, Geometry g, Program program, Rows<P> rows,
                 double* partials) {
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> prog_none;  // the steps before the reduction step read no statistics
  const int64_t image = blockIdx.x / g.blocks_per_image;
  const int kind = JitterKinds ? int{kContrast} : program.reduction;
  decode_block_program(prog, program, rows, image / g.frames);
  __syncthreads();
  double stats[kStats];
#pragma unroll
  for (int i = 0; i < kStats; ++i) stats[i] = initial_stat(kind, i);
  if (prog.reduce_at < 0) {  // the sample does not run it
    if (threadIdx.x < kStats) partials[blockIdx.x * kStats + threadIdx.x] = stats[threadIdx.x];
    return;
  }
  const int64_t image_base = image * C * g.pixels, in_base = image * g.in_image_step;
  for_each_chunk_of<C, T, V, Vectorized, Interleaved>(in, g, in_base, g.in_channel_step,
                                                      [&](int64_t p0, const auto& runs) {
    P x[V][3];
    reach_reduction<C, T, P, V, Vectorized, Interleaved, JitterKinds>(
        runs, in, in_base, staged, g, image_base, p0, prog, prog_none, x);
    if (kind == kContrast) {  // the chunk's grays summed first: one double addition per chunk
      P grays = 0;
#pragma unroll
      for (int j = 0; j < V; ++j) grays += p0 + j < g.pixels ? contrast_gray<C, T>(x[j]) : P(0);
      stats[0] += grays;
      return;
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if (p0 + j < g.pixels) add_pixel_stats<C, T>(kind, x[j], stats);
    }
  });
  block_stats(kind, stats, partials + blockIdx.x * kStats);
}

// Equalize's histograms ([images, 3, kBins], zeroed) of each image's uint8 values at its
// sample's equalize step: per block in shared memory, then added to its image's. Integer counts:
// the same in any order.
template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved>
__global__ void __launch_bounds__(kThreads)
    histograms(const T* in, T* staged, Geometry g, Program program, Rows<P> rows,
               int64_t* counts) {
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> prog_none;
  __shared__ unsigned int block_counts[C * kBins];
  const int64_t image = blockIdx.x / g.blocks_per_image;
  decode_block_program(prog, program, rows, image / g.frames);
  for (int i = threadIdx.x; i < C * kBins; i += kThreads) block_counts[i] = 0;
  __syncthreads();
  if (prog.reduce_at < 0) return;  // the sample does not equalize
  const int64_t image_base = image * C * g.pixels, in_base = image * g.in_image_step;
  for_each_chunk_of<C, T, V, Vectorized, Interleaved>(in, g, in_base, g.in_channel_step,
                                                      [&](int64_t p0, const auto& runs) {
    P x[V][3];
    reach_reduction<C, T, P, V, Vectorized, Interleaved>(runs, in, in_base, staged, g, image_base,
                                                         p0, prog, prog_none, x);
#pragma unroll
    for (int j = 0; j < V; ++j) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        if (p0 + j < g.pixels) atomicAdd(&block_counts[c * kBins + equalize_bin<T>(x[j][c])], 1u);
      }
    }
  });
  __syncthreads();
  auto* image_counts = reinterpret_cast<unsigned long long*>(counts + image * 3 * kBins);
  for (int i = threadIdx.x; i < C * kBins; i += kThreads) {
    if (block_counts[i] != 0) {
      atomicAdd(image_counts + i, static_cast<unsigned long long>(block_counts[i]));
    }
  }
}

// Each image's and channel's equalize table from its histogram: a warp each.
__global__ void equalize_tables(const int64_t* counts, uint8_t* tables, int64_t channels) {
  const int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32;
  if (i < channels) warp_equalize_table(counts + i * kBins, tables + i * kBins);
}

// JitterKinds: the program's stages are all jitter kinds (is_jitter_kind); the other kinds' code is
// left out, as in resident_transform.
template <int C, typename T, typename out_t, typename P, int V, bool Vectorized, bool Interleaved,
          bool JitterKinds>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM<T, V>)
    transform(const T* in, const T* staged, out_t* out, Geometry g, Program program,
              Rows<P> rows, const double* partials, const uint8_t* tables, Output<P> o) {
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> reduced;
  __shared__ uint8_t table[3 * kBins];
  const int64_t image = blockIdx.x / g.blocks_per_image;
  decode_block_program(prog, program, rows, image / g.frames);
  load_reduced<T>(reduced, partials, g, image, program.reduction,
                  tables != nullptr ? table : nullptr);
  if (tables != nullptr) {
    for (int i = threadIdx.x; i < 3 * kBins; i += kThreads) {
      table[i] = tables[image * 3 * kBins + i];
    }
  }
  __syncthreads();
  const int64_t image_base = image * C * g.pixels;
  // resumes at the reduction step where the reduction pass kept the pixels there
  const int first = staged != nullptr && prog.reduce_at > 0 ? prog.reduce_at : 0;
  const T* from = first > 0 ? staged : in;
  const int64_t from_base = first > 0 ? image_base : image * g.in_image_step;
  const int64_t from_step = first > 0 ? g.channel_step : g.in_channel_step;
  for_each_chunk_of<C, T, V, Vectorized, Interleaved>(from, g, from_base, from_step,
                                                      [&](int64_t p0, const auto& runs) {
    P x[V][3];
    unpack_pixels<C, T, P, V, Vectorized, Interleaved>(runs, from, g, from_base, from_step, p0, x);
    run_steps<C, T, JitterKinds>(prog, first, prog.count, x, reduced);
    store_pixels<C, T, out_t, P, V, Vectorized, Interleaved>(
        out, g, image_base, p0, x, o, warp_stage<C, out_t, V, Interleaved>(), g.pixels);
  });
}

// The gradient of each pixel: MeanGradPass sums, per block, the gradient of contrast's mean (each
// pixel taken back to its contrast step); the other pass takes every pixel back to the image and
// writes its gradient. `scale` holds 1 / std. (Autocontrast, the other reduction, has none.)
template <int C, typename T, typename P, bool MeanGradPass, int V, bool Vectorized,
          bool Interleaved>
__global__ void __launch_bounds__(kThreads)
    backward(const T* grad, const T* in, T* grad_in, Geometry g, Program program, Rows<P> rows,
             const double* mean_partials, double* mean_grad_partials, Output<P> scale) {
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> reduced;
  __shared__ P mean_grad_per_pixel;
  const int64_t image = blockIdx.x / g.blocks_per_image;
  decode_block_program(prog, program, rows, image / g.frames);
  load_reduced<T>(reduced, mean_partials, g, image, kContrast);
  if (threadIdx.x < 32) {
    double grad_stats[kStats] = {0};
    if (mean_partials != nullptr && !MeanGradPass) {
      warp_image_stats(mean_grad_partials, g, image, kContrast, grad_stats);
    }
    if (threadIdx.x == 0) {
      mean_grad_per_pixel = static_cast<P>(grad_stats[0] / static_cast<double>(g.pixels));
    }
  }
  __syncthreads();
  double sums[kStats] = {0};
  if (MeanGradPass && prog.reduce_at < 0) {
    if (threadIdx.x < kStats) mean_grad_partials[blockIdx.x * kStats + threadIdx.x] = 0;
    return;
  }
  const int64_t image_base = image * C * g.pixels;
  for_each_chunk<V>(g, [&](int64_t p0) {
    P x[V][3], gx[V][3];
    P chunk_sum = 0;
    load_pixels<C, T, P, V, Vectorized, Interleaved>(in, g, image_base, p0, x);
    load_pixels<C, T, P, V, Vectorized, Interleaved>(grad, g, image_base, p0, gx);
    for (int j = 0; j < V; ++j) {
#pragma unroll
      for (int c = 0; c < C; ++c) gx[j][c] *= scale.inv_std[c];
      P mean_grad = 0;
      backprop_pixel<C, T>(prog, x[j], reduced, MeanGradPass ? prog.reduce_at : 0,
                           mean_grad_per_pixel, gx[j], &mean_grad);
      if (p0 + j < g.pixels) chunk_sum += mean_grad;
    }
    sums[0] += chunk_sum;
    if constexpr (!MeanGradPass) {
      store_pixels<C, T, T, P, V, Vectorized, Interleaved>(grad_in, g, image_base, p0, gx,
                                                          Output<P>{},
                                                          warp_stage<C, T, V, Interleaved>(),
                                                          g.pixels);
    }
  });
  if constexpr (MeanGradPass) block_stats(kContrast, sums, mean_grad_partials + blockIdx.x * kStats);
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Calls f(channels, vectorized, interleaved) as integral constants for the image's layout (one
// channel: planar).
template <typename F>
void with_layout(const ImageGeometry& cg, bool vectorized, F&& f) {
  using Yes = std::true_type;
  using No = std::false_type;
  if (cg.channels == 1) {
    if (vectorized) {
      f(std::integral_constant<int, 1>{}, Yes{}, No{});
    } else {
      f(std::integral_constant<int, 1>{}, No{}, No{});
    }
  } else if (!vectorized) {
    f(std::integral_constant<int, 3>{}, No{}, No{});
  } else if (cg.interleaved) {
    f(std::integral_constant<int, 3>{}, Yes{}, Yes{});
  } else {
    f(std::integral_constant<int, 3>{}, Yes{}, No{});
  }
}

// The input's steps between images and between planes, in elements.
struct InputSteps {
  int64_t image, channel;
};

// A dense image's steps (planar or interleaved, see dense_image).
InputSteps dense_steps(const ImageGeometry& cg) {
  return {cg.channels * cg.pixels, cg.interleaved ? 1 : cg.pixels};
}

// The steps of an image whose planes each hold their pixels one after the other, the planes and
// the images at strides of their own (a channel slice, a plane of a wider batch, a plane expanded
// to three channels with stride 0): read in place, where a copy would take another pass over the
// batch. Empty for any other layout.
std::optional<InputSteps> plane_steps(const at::Tensor& image) {
  const int64_t d = image.dim();
  const int64_t height = image.size(d - 2), width = image.size(d - 1);
  if ((width != 1 && image.stride(d - 1) != 1) || (height != 1 && image.stride(d - 2) != width)) {
    return std::nullopt;
  }
  // (the step of a dimension of size 1 is none: 0)
  InputSteps steps{0, image.size(d - 3) == 1 ? height * width : image.stride(d - 3)};
  if (d == 4 && image.size(0) != 1) steps.image = image.stride(0);
  if (d == 5) {  // image n T + t at (n T + t) steps.image
    const int64_t samples = image.size(0), frames = image.size(1);
    if (samples != 1 && frames != 1 && image.stride(0) != frames * image.stride(1)) {
      return std::nullopt;
    }
    if (frames != 1) {
      steps.image = image.stride(1);
    } else if (samples != 1) {
      steps.image = image.stride(0);
    }
  }
  return steps;
}

bool only_jitter_kinds(const Program& program) {
  for (int k = 0; k < program.count; ++k) {
    if (!is_jitter_kind(program.kinds[k])) return false;
  }
  return true;
}

Geometry kernel_geometry(const ImageGeometry& cg, int pixels_per_thread, InputSteps in) {
  const int64_t chunks = ceil_div(cg.pixels, int64_t{kThreads} * pixels_per_thread);
  const int64_t images = std::max<int64_t>(cg.samples * cg.frames, 1);
  const int64_t blocks_per_image =
      std::clamp<int64_t>(ceil_div(kTargetBlocks, images), 1, std::max<int64_t>(chunks, 1));
  return {cg.pixels, cg.frames, chunks, blocks_per_image, cg.interleaved ? 1 : cg.pixels,
          cg.interleaved ? cg.channels : 1, in.image, in.channel};
}

int64_t block_count(const ImageGeometry& cg, const Geometry& g, const char* op) {
  const int64_t blocks = cg.samples * cg.frames * g.blocks_per_image;
  TORCH_CHECK(blocks <= std::numeric_limits<int32_t>::max(), op,
              ": the image is too large for one launch");
  return blocks;
}

void photometric(const at::Tensor& out, const at::Tensor& image, const Program& program,
                 const at::Tensor& factors, const at::Tensor& order, const at::Tensor& apply,
                 std::optional<c10::ArrayRef<double>> mean,
                 std::optional<c10::ArrayRef<double>> stddev) {
  const c10::cuda::CUDAGuard device_guard(image.device());
  const bool dense = is_planar_image(image) || is_interleaved_image(image);
  const std::optional<InputSteps> strided = dense ? std::nullopt : plane_steps(image);
  const at::Tensor in = dense || strided ? image : image.contiguous();
  const ImageGeometry cg = image_geometry(in);
  const InputSteps steps = strided.value_or(dense_steps(cg));
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  photometric_dispatch(in.scalar_type(), out.scalar_type(), [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using out_t = typename decltype(out_tag)::type;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    constexpr int V = kVec<T>;
    const Rows<P> rows = photometric_rows<P>(factors, order, apply);
    const Output<P> o = photometric_output<P>(mean, stddev);
    const T* src = in.const_data_ptr<T>();
    out_t* dst = out.mutable_data_ptr<out_t>();
    const auto aligned_runs = [&](int pixels) {
      return cg.pixels % pixels == 0 && steps.image % pixels == 0 &&
             (cg.interleaved || steps.channel % pixels == 0) && aligned(src, sizeof(T) * pixels) &&
             aligned(dst, sizeof(out_t) * pixels);
    };
    // uint8 images whose planes are not 8-byte aligned take runs of 4 pixels
    const bool wide = aligned_runs(V);
    const bool narrow = !wide && kIsU8<T> && aligned_runs(4);
    const bool equalize = program.reduction == kEqualize;
    const bool jitter_kinds = only_jitter_kinds(program);  // (their reduction: none or contrast)
    const int64_t images = cg.samples * cg.frames;
    with_layout(cg, wide || narrow, [&](auto channels, auto vector, auto interleaved) {
      constexpr int C = decltype(channels)::value;
      constexpr bool kVectorized = decltype(vector)::value;
      constexpr bool kInterleaved = decltype(interleaved)::value;
      // true where it launched resident_transform (with runs in halves, Halves; built for
      // ColorJitter's and RandomPhotometricDistort's kinds alone, JitterKinds)
      const auto resident_of = [&](auto halves, auto jitter_kinds) {
        constexpr bool kHalves = decltype(halves)::value;
        constexpr auto kernel = resident_transform<C, T, out_t, P, V, kInterleaved, kHalves,
                                                   decltype(jitter_kinds)::value>;
        static PerDevice<int> max_bytes;
        const bool hopper_here = hopper_code<kernel>();
        const int split = hopper_here ? kMaxSplit : 1;
        const int64_t runs = cg.pixels / V, part_runs = ceil_div(runs, int64_t{split});
        // whole warps' runs where a warp stages its stores where its runs were
        const int64_t held_runs =
            kStagedStores<C, out_t, V, kInterleaved> ? ceil_div(part_runs, 32) * 32 : part_runs;
        const int64_t bytes = C * held_runs * V * static_cast<int64_t>(sizeof(T));
        // halves: every warp's runs in one part, whole (chunks are whole warps' runs)
        if (kHalves && (part_runs % 32 != 0 || (runs - (split - 1) * part_runs) % 32 != 0)) {
          return false;
        }
        if (!wide || !program.reduction || part_runs * (split - 1) >= runs ||
            bytes > max_bytes.get([&] { return resident_bytes(kernel); })) {
          return false;
        }
        // at most kResidentThreads an SM, where `split` blocks share one
        const int64_t rounds = ceil_div(part_runs, kResidentThreads / split);
        const int64_t threads = ceil_div(ceil_div(part_runs, rounds), 32) * 32;
        const int per_sm = resident_blocks_per_sm(kernel, static_cast<int>(threads), bytes);
        if (!resident_fills_gpu(images * split, per_sm)) return false;
        launch_clustered(kernel, hopper_here, images * split, threads, bytes, split, stream, src,
                         dst, kernel_geometry(cg, V, steps), program, rows, o, split);
        return true;
      };
      const auto resident = [&](auto halves) {
        if constexpr (C == 3) {  // the jitter kinds' kernels: RGB images'
          if (jitter_kinds && program.reduction) return resident_of(halves, std::true_type{});
        }
        return resident_of(halves, std::false_type{});
      };
      if constexpr (kIsU8<T> && kVectorized) {
        if constexpr (kInterleaved ? kRunPairs<T, out_t, V> : kRunHalves<T, out_t, V>) {
          if (resident(std::true_type{})) return;
        }
        if (resident(std::false_type{})) return;
      }
      at::Tensor staged, counts, tables;
      if (program.reduction) {  // the pixels at the reduction step, dense
        staged = strided ? at::empty(in.sizes(), in.options()) : at::empty_like(in);
      }
      if (equalize) {
        counts = at::zeros({images, 3, kBins}, in.options().dtype(at::kLong));
        tables = at::empty({images, 3, kBins}, in.options().dtype(at::kByte));
      }
      const auto launch = [&](auto width, auto jitter_build) {
        constexpr int W = decltype(width)::value;
        constexpr bool kJitterKinds = decltype(jitter_build)::value;
        const Geometry g = kernel_geometry(cg, W, steps);
        const int64_t blocks = block_count(cg, g, "gpuaug::photometric");
        at::Tensor partials;
        if (program.reduction && !equalize) {
          partials = at::empty({blocks, kStats}, in.options().dtype(at::kDouble));
        }
        double* sums = partials.defined() ? partials.mutable_data_ptr<double>() : nullptr;
        if (sums != nullptr) {
          reduce_stats<C, T, P, W, kVectorized, kInterleaved, kJitterKinds>
              <<<blocks, kThreads, 0, stream>>>(src, staged.mutable_data_ptr<T>(), g, program,
                                                rows, sums);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
        if (equalize) {
          histograms<C, T, P, W, kVectorized, kInterleaved><<<blocks, kThreads, 0, stream>>>(
              src, staged.mutable_data_ptr<T>(), g, program, rows,
              counts.mutable_data_ptr<int64_t>());
          C10_CUDA_KERNEL_LAUNCH_CHECK();
          equalize_tables<<<ceil_div(images * 3 * 32, kThreads), kThreads, 0, stream>>>(
              counts.const_data_ptr<int64_t>(), tables.mutable_data_ptr<uint8_t>(), images * 3);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
        transform<C, T, out_t, P, W, kVectorized, kInterleaved, kJitterKinds>
            <<<blocks, kThreads, 0, stream>>>(
                src, staged.defined() ? staged.const_data_ptr<T>() : nullptr, dst, g, program,
                rows, sums, equalize ? tables.const_data_ptr<uint8_t>() : nullptr, o);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      };
      if constexpr (kIsU8<T> && kVectorized) {
        if (narrow) return launch(std::integral_constant<int, 4>{}, std::false_type{});
      }
      // the jitter kinds' build: RGB images in 16-byte runs
      if constexpr (C == 3 && kVectorized) {
        if (jitter_kinds) return launch(std::integral_constant<int, V>{}, std::true_type{});
      }
      launch(std::integral_constant<int, V>{}, std::false_type{});
    });
  });
}

void photometric_backward(const at::Tensor& grad_image, const at::Tensor& grad,
                          const at::Tensor& image, const Program& program,
                          const at::Tensor& factors, const at::Tensor& order,
                          const at::Tensor& apply, std::optional<c10::ArrayRef<double>> stddev) {
  const c10::cuda::CUDAGuard device_guard(image.device());
  const at::Tensor in = dense_image(image);
  const at::Tensor grad_out = grad_in_image_layout(grad, grad_image);
  const ImageGeometry cg = image_geometry(in);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(),
                                  "gpuaug::_photometric_backward", [&] {
    using T = scalar_t;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    constexpr int V = kVec<T>;
    const Geometry g = kernel_geometry(cg, V, dense_steps(cg));
    const Rows<P> rows = photometric_rows<P>(factors, order, apply);
    const Output<P> scale = photometric_grad_scale<P>(stddev);
    const T* src = in.const_data_ptr<T>();
    const T* grad_src = grad_out.const_data_ptr<T>();
    T* dst = grad_image.mutable_data_ptr<T>();
    const bool vectorized = cg.pixels % V == 0 && aligned(src, sizeof(T) * V) &&
                            aligned(grad_src, sizeof(T) * V) && aligned(dst, sizeof(T) * V);
    const int64_t blocks = block_count(cg, g, "gpuaug::_photometric_backward");
    at::Tensor partials;  // the means', then their gradients'
    if (program.reduction) {  // contrast: autocontrast has no gradient
      partials = at::empty({2, blocks, kStats}, in.options().dtype(at::kDouble));
    }
    with_layout(cg, vectorized, [&](auto channels, auto vector, auto interleaved) {
      constexpr int C = decltype(channels)::value;
      constexpr bool kVectorized = decltype(vector)::value;
      constexpr bool kInterleaved = decltype(interleaved)::value;
      double* means = partials.defined() ? partials.mutable_data_ptr<double>() : nullptr;
      double* mean_grads = partials.defined() ? means + blocks * kStats : nullptr;
      if (means != nullptr) {
        reduce_stats<C, T, P, V, kVectorized, kInterleaved>
            <<<blocks, kThreads, 0, stream>>>(src, nullptr, g, program, rows, means);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        backward<C, T, P, true, V, kVectorized, kInterleaved><<<blocks, kThreads, 0, stream>>>(
            grad_src, src, dst, g, program, rows, means, mean_grads, scale);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
      backward<C, T, P, false, V, kVectorized, kInterleaved><<<blocks, kThreads, 0, stream>>>(
          grad_src, src, dst, g, program, rows, means, mean_grads, scale);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

}  // namespace
}  // namespace gpuaug::cuda::photometric_impl

namespace gpuaug {
GPUAUG_REGISTER_LOOP(photometric_loops, cuda, &cuda::photometric_impl::photometric);
GPUAUG_REGISTER_LOOP(photometric_backward_loops, cuda,
                     &cuda::photometric_impl::photometric_backward);
}  // namespace gpuaug
