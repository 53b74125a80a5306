// gpuaug::auto_augment's CPU loop: the operations decoded, then stage by stage (chain.h's
// stage_bases) each chain's stage image written from the stage before (in parallel over rows) and
// the statistics of the reductions in that stage, reduction by reduction (in parallel over the
// chains), then every output pixel from its sample's chains (in parallel over rows).
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/auto_augment/auto_augment.h"
#include "kernels/photometric/photometric.h"

namespace gpuaug::cpu {
namespace {

using namespace gpuaug::policy;

// Chain i's stage `stage` image (past the first), from the stage before it, row by row.
template <int C, typename T, typename P>
void write_stage(const Call& call, const std::vector<Decoded<P>>& decoded,
                 const std::vector<ReductionSlot<P>>& slots, const StageImages<T>& stages,
                 int stage) {
  at::parallel_for(0, call.chains() * call.height, 8, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t i = row / call.height, y = row % call.height;
      int bases[kMaxDepth];
      const int count = stage_bases(decoded.data() + i * call.depth, static_cast<int>(call.depth),
                                    call.interpolation, bases);
      if (count <= stage) continue;
      const auto chain = chain_of<C, T, P>(call, i, decoded.data(), slots.data(), stages,
                                           stage - 1, bases[stage - 1]);
      T* image = stages.of(stage, i);
      for (int64_t x = 0; x < call.width; ++x) {
        const Pixel<P> p = value_at(chain, bases[stage], y, x);
        for (int c = 0; c < C; ++c) {
          image[(c * call.height + y) * call.width + x] = static_cast<T>(p.v[c]);
        }
      }
    }
  });
}

// The statistics of each chain's reduction number r where it lies in stage `stage`.
template <int C, typename T, typename P>
void gather_statistics(const Call& call, const std::vector<Decoded<P>>& decoded,
                       std::vector<ReductionSlot<P>>& slots, const StageImages<T>& stages,
                       int stage, int r) {
  const int64_t pixels = call.height * call.width;
  at::parallel_for(0, call.chains(), 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> histograms(3 * photo::kBins);
    for (int64_t i = begin; i < end; ++i) {
      const int k = reduction_at(decoded.data() + i * call.depth, static_cast<int>(call.depth), r);
      if (k < 0) continue;
      int at_stage;
      const auto chain = chain_at<C, T, P>(call, i, decoded.data(), slots.data(), stages, k,
                                           &at_stage);
      if (at_stage != stage) continue;
      const int kind = chain.ops[k].step.kind;
      double stats[photo::kStats];
      for (int s = 0; s < photo::kStats; ++s) stats[s] = photo::initial_stat(kind, s);
      std::fill(histograms.begin(), histograms.end(), 0);
      for (int64_t y = 0; y < call.height; ++y) {
        for (int64_t x = 0; x < call.width; ++x) {
          const Pixel<P> p = value_at(chain, k, y, x);
          if (kind == photo::kEqualize) {
            for (int c = 0; c < C; ++c) {
              ++histograms[c * photo::kBins + photo::equalize_bin<T>(p.v[c])];
            }
          } else {
            photo::add_pixel_stats<C, T>(kind, p.v, stats);
          }
        }
      }
      slots[i * call.depth + k] = finished_slot<T, P>(kind, stats, histograms.data(), pixels);
    }
  });
}

template <int C, typename T, typename out_t>
void run(const at::Tensor& out, const Call& call, std::optional<c10::ArrayRef<double>> mean,
         std::optional<c10::ArrayRef<double>> stddev) {
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t count = call.chains() * call.depth;
  std::vector<Decoded<P>> decoded(count);
  for (int64_t j = 0; j < count; ++j) decoded[j] = decode_at<T, P>(call, j);
  std::vector<ReductionSlot<P>> slots(count);
  const int64_t image_size = call.channels * call.height * call.width;
  std::vector<T> stage_data(StageImages<T>::count(call.depth) * call.chains() * image_size);
  const StageImages<T> stages{stage_data.data(), call.chains(), image_size};
  const int depth = static_cast<int>(call.depth);
  for (int s = 0; s < depth; ++s) {
    if (s > 0) write_stage<C, T, P>(call, decoded, slots, stages, s);
    // the r-th reduction in stage s lies past r reductions and s stage bases: r + s < depth
    for (int r = 0; r + s < depth; ++r) {
      gather_statistics<C, T, P>(call, decoded, slots, stages, s, r);
    }
  }

  const photo::Output<P> o = photometric_output<P>(mean, stddev);
  out_t* dst = out.mutable_data_ptr<out_t>();
  const int64_t s0 = out.stride(0), s1 = out.stride(1), s2 = out.stride(2), s3 = out.stride(3);
  const int64_t branches = call.branches;
  at::parallel_for(0, call.samples * call.height, 8, [&](int64_t begin, int64_t end) {
    std::vector<Chain<C, T, P>> chains;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / call.height, y = row % call.height;
      chains.clear();
      for (int64_t b = 0; b < branches; ++b) {
        chains.push_back(chain_at<C, T, P>(call, n * branches + b, decoded.data(), slots.data(),
                                           stages, depth));
      }
      for (int64_t x = 0; x < call.width; ++x) {
        Pixel<P> v;
        if (call.weights == nullptr) {
          v = value_at(chains[0], depth, y, x);
        } else {
          const float* w = call.weights + n * (branches + 1);
          const Pixel<P> image = sample_pixel<C, T, P>(call, n, y, x);
          P mix[3];
          for (int c = 0; c < C; ++c) mix[c] = static_cast<P>(w[0]) * image.v[c];
          for (int64_t b = 0; b < branches; ++b) {
            const Pixel<P> a = value_at(chains[b], depth, y, x);
            for (int c = 0; c < C; ++c) mix[c] = mix[c] + static_cast<P>(w[b + 1]) * a.v[c];
          }
          for (int c = 0; c < C; ++c) v.v[c] = mixed_value<T>(mix[c]);
        }
        for (int c = 0; c < C; ++c) {
          dst[n * s0 + c * s1 + y * s2 + x * s3] = photo::convert<T, out_t, P>(v.v[c], o, c);
        }
      }
    }
  });
}

void auto_augment_cpu(const at::Tensor& out, const at::Tensor& image, const Call& call,
                      std::optional<c10::ArrayRef<double>> mean,
                      std::optional<c10::ArrayRef<double>> stddev) {
  AT_DISPATCH_FLOATING_TYPES_AND(at::kByte, image.scalar_type(), "gpuaug::auto_augment", [&] {
    using T = scalar_t;
    with_output_type<T>(out.scalar_type(), [&](auto out_type) {
      using out_t = decltype(out_type);
      if (call.channels == 1) {
        run<1, T, out_t>(out, call, mean, stddev);
      } else {
        run<3, T, out_t>(out, call, mean, stddev);
      }
    });
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(auto_augment_loops, cpu, &auto_augment_cpu);

}  // namespace gpuaug::cpu
