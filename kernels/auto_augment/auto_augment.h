// What gpuaug::auto_augment's op body (ops/auto_augment.cpp) and its CPU and CUDA loops share:
// the call as the loops read it, and the table of loops.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <optional>
#include <type_traits>

#include "kernels/auto_augment/chain.h"
#include "kernels/loops.h"

namespace gpuaug::policy {

// The call: the image ([N, C, H, W], checked, in any strides), each sample's chains (operations
// and magnitudes [N, B, D], contiguous), AugMix's weights ([N, B + 1] float32 contiguous: the
// image's, then each chain's; null: one chain, its image the output) and the warps' settings.
struct Call {
  const void* image;
  int64_t samples, channels, height, width;
  int64_t sample_stride, channel_stride, row_stride, column_stride;
  const int64_t* operations;
  const double* magnitudes;
  int64_t branches, depth;
  const float* weights;
  int interpolation;
  bool fill_given;
  double fill[3];

  C10_HOST_DEVICE int64_t chains() const { return samples * branches; }
};

// The stage images of the call's chains (stage_bases): stage s > 0 of chain i in image
// (s - 1) % 2 of the two, [chains, C, H, W] contiguous each. Pass s writes them from stage s - 1.
template <typename T>
struct StageImages {
  T* data;
  int64_t chains, image_size;  // C * H * W

  C10_HOST_DEVICE T* of(int stage, int64_t i) const {
    return data + (((stage - 1) % 2) * chains + i) * image_size;
  }

  // The images a call of `depth` operations a chain needs: one a stage past the first, two at most.
  static int64_t count(int64_t depth) { return depth < 2 ? 0 : (depth == 2 ? 1 : 2); }
};

// Chain i's view of the call (sample i / branches) from stage `stage` on (its base level `base`):
// its decoded operations and slots.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline Chain<C, T, P> chain_of(const Call& call, int64_t i,
                                              const Decoded<P>* decoded,
                                              const ReductionSlot<P>* slots,
                                              const StageImages<T>& stages, int stage, int base) {
  Chain<C, T, P> c{};
  if (stage == 0) {
    c.image = static_cast<const T*>(call.image) + (i / call.branches) * call.sample_stride;
    c.channel_stride = call.channel_stride;
    c.row_stride = call.row_stride;
    c.column_stride = call.column_stride;
  } else {
    c.image = stages.of(stage, i);
    c.channel_stride = call.height * call.width;
    c.row_stride = call.width;
    c.column_stride = 1;
  }
  c.height = call.height;
  c.width = call.width;
  c.base = base;
  c.ops = decoded + i * call.depth;
  c.slots = slots + i * call.depth;
  c.interpolation = call.interpolation;
  c.fill_given = call.fill_given;
  for (int k = 0; k < 3; ++k) c.fill[k] = static_cast<P>(call.fill[k]);
  return c;
}

// The stage of a chain (bases from stage_bases, `stages` of them) that holds level k.
C10_HOST_DEVICE inline int stage_of(const int (&bases)[kMaxDepth], int stages, int k) {
  int s = 0;
  while (s + 1 < stages && bases[s + 1] <= k) ++s;
  return s;
}

// Chain i's view from the stage that holds level `level` (its last stage for the whole chain).
template <int C, typename T, typename P>
C10_HOST_DEVICE inline Chain<C, T, P> chain_at(const Call& call, int64_t i,
                                              const Decoded<P>* decoded,
                                              const ReductionSlot<P>* slots,
                                              const StageImages<T>& stages, int level,
                                              int* stage_out = nullptr) {
  int bases[kMaxDepth];
  const int count = stage_bases(decoded + i * call.depth, static_cast<int>(call.depth),
                                call.interpolation, bases);
  const int s = stage_of(bases, count, level);
  if (stage_out != nullptr) *stage_out = s;
  return chain_of<C, T, P>(call, i, decoded, slots, stages, s, bases[s]);
}

// One level of the backward (grad.h): the operation of each chain at that level, the shapes, and
// where the gradient of its output comes from.
struct LevelCall {
  const int64_t* operations;  // [chains]
  const double* magnitudes;   // [chains]
  int64_t chains, branches, channels, height, width;
  int interpolation;
  bool fill_given;
  // The top level reads the op's output gradient ([samples, C, H, W], shared by a sample's chains)
  // times 1 / std and, with AugMix's weights ([samples, branches + 1]), the chain's weight; the
  // levels below read their chain's own ([chains, C, H, W]).
  bool top;
  const float* weights;
  double inv_std[3];

  C10_HOST_DEVICE int64_t pixels() const { return height * width; }
};

// Pixel (y, x) of sample n's image.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline Pixel<P> sample_pixel(const Call& call, int64_t n, int64_t y, int64_t x) {
  const T* image = static_cast<const T*>(call.image) + n * call.sample_stride +
                   y * call.row_stride + x * call.column_stride;
  Pixel<P> p{};
  for (int c = 0; c < C; ++c) p.v[c] = photo::load<P>(image[c * call.channel_stride]);
  return p;
}

// Operation j (of all chains' operations, in order) decoded.
template <typename T, typename P>
C10_HOST_DEVICE inline Decoded<P> decode_at(const Call& call, int64_t j) {
  return decode<T, P>(static_cast<int>(call.operations[j]), call.magnitudes[j], call.width,
                      call.height);
}

// A reduction's statistics over its chain's image before it, combined: contrast's sum of grays,
// autocontrast's channel minima then maxima (photo::add_pixel_stats), equalize's histograms.
template <typename T, typename P>
C10_HOST_DEVICE inline ReductionSlot<P> finished_slot(int kind, const double (&stats)[photo::kStats],
                                                      const int64_t* histograms, int64_t pixels) {
  ReductionSlot<P> slot{};
  const photo::Reduced<P> r = photo::finish_reduction<T, P>(kind, stats, pixels);
  slot.mean = r.mean;
  for (int c = 0; c < 3; ++c) {
    slot.low[c] = r.low[c];
    slot.inv_scale[c] = r.inv_scale[c];
  }
  if (kind == photo::kEqualize) {
    for (int c = 0; c < 3; ++c) {
      photo::equalize_table(histograms + c * photo::kBins, slot.table + c * photo::kBins);
    }
  }
  return slot;
}

// f(out_t{}) for the call's (checked) output dtype: the image's T, or float32 from uint8.
template <typename T, typename F>
void with_output_type(at::ScalarType out, F&& f) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    if (out == at::kFloat) return f(float{});
  }
  f(T{});
}

}  // namespace gpuaug::policy

namespace gpuaug {

// The loop fills `out` ([N, C, H, W], the output dtype, allocated and checked by the op's body).
using AutoAugmentLoop = void (*)(const at::Tensor& out, const at::Tensor& image,
                                 const policy::Call& call,
                                 std::optional<c10::ArrayRef<double>> mean,
                                 std::optional<c10::ArrayRef<double>> stddev);
extern Loops<AutoAugmentLoop> auto_augment_loops;

// The backward's loop for one level: fills `grad_in` ([chains, C, H, W] contiguous), the
// gradient of the level, from that of the level's output `grad_out` (laid out as LevelCall::top
// says, contiguous) and the level `level` ([chains, C, H, W] contiguous, the image's floating
// dtype).
using AutoAugmentLevelLoop = void (*)(const at::Tensor& grad_in, const at::Tensor& grad_out,
                                      const at::Tensor& level, const policy::LevelCall& call);
extern Loops<AutoAugmentLevelLoop> auto_augment_level_loops;

}  // namespace gpuaug
