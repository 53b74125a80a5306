// gpuaug::_auto_augment_backward's CPU loop for one level: in parallel over the chains, each
// chain's operation decoded, then its reduction's two passes (the level's statistics, then the
// sums of the gradient through them), sharpness's clamped gradients, and the adjoint pixel by
// pixel.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <vector>

#include "kernels/auto_augment/grad.h"

namespace gpuaug::cpu {
namespace {

using namespace gpuaug::policy;

template <int C, typename T>
void chain_adjoint(T* grad_in, const T* grad_out, const T* level, const LevelCall& call,
                   int64_t i, std::vector<T>& passed) {
  using P = T;
  const Decoded<P> op = decode<T, P>(static_cast<int>(call.operations[i]), call.magnitudes[i],
                                     call.width, call.height);
  const int64_t pixels = call.pixels(), plane = pixels;
  const T* in = level + i * C * pixels;
  T* out = grad_in + i * C * pixels;
  const auto pixel_of = [&](const T* planes, int64_t p, P (&v)[3]) {
    for (int c = 0; c < 3; ++c) v[c] = c < C ? planes[c * plane + p] : P(0);
  };
  const auto grad_of = [&](int64_t p, P (&g)[3]) {
    for (int c = 0; c < 3; ++c) g[c] = c < C ? output_grad<P>(call, grad_out, i, c, p) : P(0);
  };
  LevelSums<P> sums{};
  if (sums_level(op)) {
    const int kind = op.step.kind;
    double stats[photo::kStats], totals[photo::kStats] = {}, ties[photo::kStats] = {};
    for (int s = 0; s < photo::kStats; ++s) stats[s] = photo::initial_stat(kind, s);
    P x[3], g[3];
    for (int64_t p = 0; p < pixels; ++p) {
      pixel_of(in, p, x);
      photo::add_pixel_stats<C, T>(kind, x, stats);
    }
    sums = level_statistics<T, P>(kind, stats, pixels);
    for (int64_t p = 0; p < pixels; ++p) {
      pixel_of(in, p, x);
      grad_of(p, g);
      add_gradient_sums<C, T>(op, sums, x, g, totals, ties);
    }
    finish_sums(op, pixels, totals, ties, sums);
  }
  const bool sharpens = op.kind == kSharpen && call.height > 2 && call.width > 2;
  if (sharpens) {
    passed.assign(C * pixels, T(0));
    for (int64_t y = 1; y + 1 < call.height; ++y) {
      for (int64_t x = 1; x + 1 < call.width; ++x) {
        P g[3];
        grad_of(y * call.width + x, g);
        sharpen_passed<C>(in, plane, call.width, op.alpha, y, x, g);
        for (int c = 0; c < C; ++c) passed[c * plane + y * call.width + x] = g[c];
      }
    }
  }
  const WarpInverse inverse = op.kind == kWarp ? warp_inverse(op, call) : WarpInverse{};
  for (int64_t p = 0; p < pixels; ++p) {
    P g[3];
    grad_of(p, g);
    const int64_t y = p / call.width, x = p % call.width;
    if (op.kind == kWarp) {
      const auto grad_at = [&](int64_t q, int c) {
        return output_grad<P>(call, grad_out, i, c, q);
      };
      warp_gather<C>(op, inverse, call, y, x, grad_at, g);
    } else if (op.kind == kStep) {
      P v[3];
      pixel_of(in, p, v);
      step_adjoint<C, T>(op, sums, v, g);
    } else if (sharpens) {
      sharpen_adjoint<C>(passed.data(), plane, call.height, call.width, op.alpha, y, x, g);
    }
    for (int c = 0; c < C; ++c) out[c * plane + p] = g[c];
  }
}

void level_adjoint_cpu(const at::Tensor& grad_in, const at::Tensor& grad_out,
                       const at::Tensor& level, const LevelCall& call) {
  AT_DISPATCH_FLOATING_TYPES(level.scalar_type(), "gpuaug::_auto_augment_backward", [&] {
    using T = scalar_t;
    T* in = grad_in.mutable_data_ptr<T>();
    const T* out = grad_out.const_data_ptr<T>();
    const T* image = level.const_data_ptr<T>();
    at::parallel_for(0, call.chains, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> passed;
      for (int64_t i = begin; i < end; ++i) {
        if (call.channels == 1) {
          chain_adjoint<1>(in, out, image, call, i, passed);
        } else {
          chain_adjoint<3>(in, out, image, call, i, passed);
        }
      }
    });
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(auto_augment_level_loops, cpu, &level_adjoint_cpu);

}  // namespace gpuaug::cpu
