// gpuaug::photometric's CPU loops. Forward: a reduction pass for contrast's grayscale mean (when
// the program has a contrast stage), then one pass that runs each pixel through its sample's
// program. Backward: with contrast, the mean again and a reduction pass for its gradient (each
// pixel's gradient back to the contrast step); then one pass back through every step.
#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "kernels/photometric.h"
#include "kernels/photometric_grad.h"
#include "kernels/photometric_math.h"

namespace gpuaug::cpu {
namespace {

using namespace gpuaug::photo;

// Fixed runs of pixels of one image, so that the means' partial sums do not depend on the number
// of threads.
constexpr int64_t kPixelsPerTask = 4096;

struct Walk {
  ColorGeometry g;
  int64_t tasks_per_image;
  int64_t channel_step, pixel_step;

  explicit Walk(const ColorGeometry& geometry)
      : g(geometry),
        tasks_per_image((geometry.pixels + kPixelsPerTask - 1) / kPixelsPerTask),
        channel_step(geometry.interleaved ? 1 : geometry.pixels),
        pixel_step(geometry.interleaved ? geometry.channels : 1) {}

  int64_t images() const { return g.samples * g.frames; }
  int64_t tasks() const { return images() * tasks_per_image; }
};

template <typename P>
std::vector<SampleProgram<P>> decode_all(const Program& program, const Walk& walk,
                                         const at::Tensor& factors, const at::Tensor& order,
                                         const at::Tensor& apply) {
  std::vector<SampleProgram<P>> progs(walk.g.samples);
  for (int64_t n = 0; n < walk.g.samples; ++n) {
    progs[n] = decode(program, factors.const_data_ptr<P>(),
                      order.defined() ? order.const_data_ptr<int64_t>() : nullptr,
                      apply.defined() ? apply.const_data_ptr<bool>() : nullptr, n);
  }
  return progs;
}

// Calls f(std::integral_constant<int, C>{}) for the image's channel count.
template <typename F>
void with_channels(const Walk& walk, F&& f) {
  if (walk.g.channels == 3) {
    f(std::integral_constant<int, 3>{});
  } else {
    f(std::integral_constant<int, 1>{});
  }
}

// Sums f(image, first, last) over each image's runs of pixels, in a fixed order.
template <typename F>
std::vector<double> image_sums(const Walk& w, F&& f) {
  std::vector<double> partial(w.tasks(), 0.0);
  at::parallel_for(0, w.tasks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t first = (task % w.tasks_per_image) * kPixelsPerTask;
      const int64_t last = std::min(first + kPixelsPerTask, w.g.pixels);
      partial[task] = f(task / w.tasks_per_image, first, last);
    }
  });
  std::vector<double> sums(w.images(), 0.0);
  for (int64_t image = 0; image < w.images(); ++image) {
    for (int64_t t = 0; t < w.tasks_per_image; ++t) {
      sums[image] += partial[image * w.tasks_per_image + t];
    }
  }
  return sums;
}

template <int C, typename T, typename P>
void load_pixel(const T* in, int64_t at, const Walk& w, P (&x)[3]) {
  for (int c = 0; c < C; ++c) x[c] = load<P>(in[at + c * w.channel_step]);
}

// Each image's grayscale mean at its sample's contrast step (0 where it has none).
template <int C, typename T, typename P>
std::vector<P> contrast_means(const T* in, const Walk& w, const std::vector<SampleProgram<P>>& progs) {
  const std::vector<double> sums = image_sums(w, [&](int64_t image, int64_t first, int64_t last) {
    const SampleProgram<P>& prog = progs[image / w.g.frames];
    double sum = 0;
    for (int64_t px = first; prog.contrast_at >= 0 && px < last; ++px) {
      P x[1][3];
      load_pixel<C>(in, image * C * w.g.pixels + px * w.pixel_step, w, x[0]);
      run_steps<C, T>(prog, 0, prog.contrast_at, x, P(0));
      sum += contrast_gray<C, T>(x[0]);
    }
    return sum;
  });
  std::vector<P> means(w.images());
  for (int64_t image = 0; image < w.images(); ++image) {
    means[image] = rounded<T>(static_cast<P>(sums[image] / static_cast<double>(w.g.pixels)));
  }
  return means;
}

template <int C, typename T, typename out_t, typename P>
void transform(const T* in, out_t* out, const Walk& w, const std::vector<SampleProgram<P>>& progs,
               const std::vector<P>& means, const Output<P>& o) {
  at::parallel_for(0, w.tasks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t image = task / w.tasks_per_image;
      const SampleProgram<P>& prog = progs[image / w.g.frames];
      const P mean = means.empty() ? P(0) : means[image];
      const int64_t first = (task % w.tasks_per_image) * kPixelsPerTask;
      const int64_t last = std::min(first + kPixelsPerTask, w.g.pixels);
      for (int64_t px = first; px < last; ++px) {
        const int64_t at = image * C * w.g.pixels + px * w.pixel_step;
        P x[1][3];
        load_pixel<C>(in, at, w, x[0]);
        run_steps<C, T>(prog, 0, prog.count, x, mean);
        for (int c = 0; c < C; ++c) out[at + c * w.channel_step] = convert<T, out_t>(x[0][c], o, c);
      }
    }
  });
}

void photometric(const at::Tensor& out, const at::Tensor& image, const Program& program,
                 const at::Tensor& factors, const at::Tensor& order, const at::Tensor& apply,
                 std::optional<c10::ArrayRef<double>> mean,
                 std::optional<c10::ArrayRef<double>> stddev) {
  const at::Tensor in = color_dense_image(image);
  const Walk walk(color_geometry(in));
  photometric_dispatch(in.scalar_type(), out.scalar_type(), [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using out_t = typename decltype(out_tag)::type;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<SampleProgram<P>> progs = decode_all<P>(program, walk, factors, order, apply);
    const Output<P> o = photometric_output<P>(mean, stddev);
    with_channels(walk, [&](auto channels) {
      constexpr int C = decltype(channels)::value;
      const T* src = in.const_data_ptr<T>();
      const std::vector<P> means =
          program.has_contrast ? contrast_means<C, T>(src, walk, progs) : std::vector<P>{};
      transform<C, T>(src, out.mutable_data_ptr<out_t>(), walk, progs, means, o);
    });
  });
}

template <int C, typename T, typename P>
void backward(const T* grad, const T* in, T* grad_in, const Walk& w,
              const std::vector<SampleProgram<P>>& progs, const std::vector<P>& means,
              const Output<P>& scale) {
  auto load_both = [&](int64_t at, P (&x)[3], P (&g)[3]) {
    load_pixel<C>(in, at, w, x);
    load_pixel<C>(grad, at, w, g);
    for (int c = 0; c < C; ++c) g[c] *= scale.inv_std[c];
  };
  // Each image's mean gradient per pixel (its total over the image / the pixel count).
  std::vector<P> mean_grads(w.images(), P(0));
  if (!means.empty()) {
    const std::vector<double> sums = image_sums(w, [&](int64_t image, int64_t first, int64_t last) {
      const SampleProgram<P>& prog = progs[image / w.g.frames];
      double sum = 0;
      for (int64_t px = first; prog.contrast_at >= 0 && px < last; ++px) {
        P x[3], g[3], mean_grad = 0;
        load_both(image * C * w.g.pixels + px * w.pixel_step, x, g);
        backprop_pixel<C, T>(prog, x, means[image], prog.contrast_at, P(0), g, &mean_grad);
        sum += mean_grad;
      }
      return sum;
    });
    for (int64_t image = 0; image < w.images(); ++image) {
      mean_grads[image] = static_cast<P>(sums[image] / static_cast<double>(w.g.pixels));
    }
  }
  at::parallel_for(0, w.tasks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t image = task / w.tasks_per_image;
      const SampleProgram<P>& prog = progs[image / w.g.frames];
      const P mean = means.empty() ? P(0) : means[image];
      const int64_t first = (task % w.tasks_per_image) * kPixelsPerTask;
      const int64_t last = std::min(first + kPixelsPerTask, w.g.pixels);
      for (int64_t px = first; px < last; ++px) {
        const int64_t at = image * C * w.g.pixels + px * w.pixel_step;
        P x[3], g[3], unused = 0;
        load_both(at, x, g);
        backprop_pixel<C, T>(prog, x, mean, 0, mean_grads[image], g, &unused);
        for (int c = 0; c < C; ++c) grad_in[at + c * w.channel_step] = static_cast<T>(g[c]);
      }
    }
  });
}

void photometric_backward(const at::Tensor& grad_image, const at::Tensor& grad,
                          const at::Tensor& image, const Program& program,
                          const at::Tensor& factors, const at::Tensor& order,
                          const at::Tensor& apply, std::optional<c10::ArrayRef<double>> stddev) {
  const at::Tensor in = color_dense_image(image);
  const at::Tensor grad_out = color_grad_in_layout(grad, grad_image);
  const Walk walk(color_geometry(in));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(),
                                  "gpuaug::_photometric_backward", [&] {
    using T = scalar_t;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<SampleProgram<P>> progs = decode_all<P>(program, walk, factors, order, apply);
    with_channels(walk, [&](auto channels) {
      constexpr int C = decltype(channels)::value;
      const T* src = in.const_data_ptr<T>();
      const std::vector<P> means =
          program.has_contrast ? contrast_means<C, T>(src, walk, progs) : std::vector<P>{};
      backward<C, T>(grad_out.const_data_ptr<T>(), src, grad_image.mutable_data_ptr<T>(), walk,
                     progs, means, photometric_grad_scale<P>(stddev));
    });
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(photometric_loops, cpu, &photometric);
GPUAUG_REGISTER_LOOP(photometric_backward_loops, cpu, &photometric_backward);

}  // namespace gpuaug::cpu
