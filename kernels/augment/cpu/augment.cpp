// gpuaug::augment's CPU loops: per sample (in parallel), a reduction pass over its output pixels
// where its program has a reduction stage, then a pass that runs each output pixel from its source
// pixels through the program into the output; the adjoint adds each output pixel's gradient to
// its source pixels' (each sample writes its own image's gradient: no two tasks share one).
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/augment/augment.h"
#include "kernels/augment/pixel.h"
#include "kernels/augment/warp.h"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/program.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::cpu {
namespace {

using namespace gpuaug::geo;
using namespace gpuaug::photo;

// The source that holds sample s (sources in sample order).
const Source& source_of(const std::vector<Source>& sources, int64_t s) {
  const auto after = std::upper_bound(
      sources.begin(), sources.end(), s,
      [](int64_t sample, const Source& src) { return sample < src.first_sample; });
  return *(after - 1);
}

template <int C, typename T, typename out_t, typename P>
void augment_samples(const at::Tensor& out, const std::vector<Source>& sources,
                     const at::Tensor& geometry, const Settings& settings,
                     const Program& program, const Rows<P>& rows, const Output<P>& o) {
  const int64_t height = settings.out_height, width = settings.out_width;
  const int64_t out_sample = out.stride(0), out_channel = out.stride(1), out_row = out.stride(2),
                out_column = out.stride(3);
  out_t* dst = out.mutable_data_ptr<out_t>();
  const int64_t* rows_of_geometry = geometry.const_data_ptr<int64_t>();
  P fill[3];
  fill_values<T>(settings, fill);
  at::parallel_for(0, out.size(0), 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const Source& src = source_of(sources, s);
      const T* image = static_cast<const T*>(src.data) + (s - src.first_sample) * src.sample_stride;
      const SampleGeometry g = sample_geometry(rows_of_geometry + s * kColumns);
      const SampleProgram<P> prog = decode(program, rows, s);
      const double* warp = warp_row(settings, s);
      const auto pixel = [&](const RowTaps& row, int64_t y, int64_t x, P (&v)[1][3]) {
        v[0][1] = v[0][2] = P(0);
        if (warp != nullptr) {
          warped_pixel<C, T, P>(image, src, g, settings, fill, warp, y, x, v[0]);
        } else {
          geometric_pixel<C, T, P>(image, src, g, settings, fill, row, x, v[0]);
        }
      };
      Reduced<P> reduced{};
      if (prog.reduce_at >= 0) {  // the statistics of the pixels at the reduction step
        const int kind = prog.steps[prog.reduce_at].kind;
        double stats[kStats];
        for (int i = 0; i < kStats; ++i) stats[i] = initial_stat(kind, i);
        for (int64_t y = 0; y < height; ++y) {
          const RowTaps row = row_taps(src, g, settings, y);
          for (int64_t x = 0; x < width; ++x) {
            P v[1][3];
            pixel(row, y, x, v);
            run_steps<C, T>(prog, 0, prog.reduce_at, v, reduced);
            add_pixel_stats<C, T>(kind, v[0], stats);
          }
        }
        reduced = finish_reduction<T, P>(kind, stats, height * width);
      }
      out_t* sample_out = dst + s * out_sample;
      for (int64_t y = 0; y < height; ++y) {
        const RowTaps row = row_taps(src, g, settings, y);
        for (int64_t x = 0; x < width; ++x) {
          P v[1][3];
          pixel(row, y, x, v);
          run_steps<C, T>(prog, 0, prog.count, v, reduced);
          for (int c = 0; c < C; ++c) {
            sample_out[c * out_channel + y * out_row + x * out_column] =
                convert<T, out_t>(v[0][c], o, c);
          }
        }
      }
    }
  });
}

void augment(const at::Tensor& out, const std::vector<Source>& sources, at::ScalarType image_dtype,
             const at::Tensor& geometry, const Settings& settings, const Program& program,
             const at::Tensor& factors, const at::Tensor& order, const at::Tensor& apply,
             std::optional<c10::ArrayRef<double>> mean,
             std::optional<c10::ArrayRef<double>> stddev) {
  photometric_dispatch(image_dtype, out.scalar_type(), [&](auto in_type, auto out_type) {
    using T = typename decltype(in_type)::type;
    using out_t = typename decltype(out_type)::type;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const Rows<P> rows = photometric_rows<P>(factors, order, apply);
    const Output<P> o = photometric_output<P>(mean, stddev);
    Settings s = settings;
    s.uint8_passes = std::is_same_v<T, uint8_t> &&
                     (s.interpolation == kBilinear || s.interpolation == kBicubic);
    if (out.size(1) == 1) {
      augment_samples<1, T, out_t, P>(out, sources, geometry, s, program, rows, o);
    } else {
      augment_samples<3, T, out_t, P>(out, sources, geometry, s, program, rows, o);
    }
  });
}

template <typename T, typename G>
void adjoint_samples(const at::Tensor& grad, const std::vector<Source>& grads,
                     const at::Tensor& geometry, const Settings& settings) {
  const int64_t channels = grad.size(1), height = grad.size(2), width = grad.size(3);
  const T* g_out = grad.const_data_ptr<T>();
  const int64_t* rows_of_geometry = geometry.const_data_ptr<int64_t>();
  at::parallel_for(0, grad.size(0), 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const Source& src = source_of(grads, s);
      G* image = static_cast<G*>(const_cast<void*>(src.data)) + (s - src.first_sample) * src.sample_stride;
      const SampleGeometry g = sample_geometry(rows_of_geometry + s * kColumns);
      const double* warp = warp_row(settings, s);
      const T* sample_grad = g_out + s * channels * height * width;
      for (int64_t y = 0; y < height; ++y) {
        for (int64_t x = 0; x < width; ++x) {
          G values[3];
          for (int c = 0; c < channels; ++c) {
            values[c] = static_cast<G>(sample_grad[(c * height + y) * width + x]);
          }
          const auto add = [](G* p, G v) { *p += v; };
          if (warp != nullptr) {
            warped_adjoint(image, src, g, settings, warp, static_cast<int>(channels), y, x,
                           values, add);
          } else {
            geometric_adjoint(image, src, g, settings, static_cast<int>(channels), y, x, values,
                              add);
          }
        }
      }
    }
  });
}

// grad: contiguous, of the images' dtype; the buffers float32 (float64 for float64 images).
void augment_adjoint(const at::Tensor& grad, const std::vector<Source>& grads,
                     const at::Tensor& geometry, const Settings& settings) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(),
                                  "gpuaug::_augment_backward", [&] {
    using G = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
    adjoint_samples<scalar_t, G>(grad, grads, geometry, settings);
  });
}

}  // namespace
}  // namespace gpuaug::cpu

namespace gpuaug {
GPUAUG_REGISTER_LOOP(augment_loops, cpu, &cpu::augment);
GPUAUG_REGISTER_LOOP(augment_adjoint_loops, cpu, &cpu::augment_adjoint);
}  // namespace gpuaug
