// gpuaug's C++ API: typed functions that call the registered operators through the dispatcher,
// so they take the same CPU, CUDA and autograd paths as torch.ops.gpuaug.* in Python.
// Under autocast they follow docs/precision.md's autocast table (kernels in ops/autocast/).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/SymIntArrayRef.h>
#include <c10/util/ArrayRef.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace gpuaug {

// max(x, 0); NaN stays NaN. Gradient: grad where x > 0, else 0.
at::Tensor relu(const at::Tensor& x);

// a * b with broadcasting; a and b share dtype and device.
at::Tensor mul(const at::Tensor& a, const at::Tensor& b);

// floor(x + 0.5) (ties round up, unlike torch.round); straight-through gradient.
at::Tensor round_ste(const at::Tensor& x);

// One step of the LLTM recurrent cell (an LSTM without forget gate, with an ELU candidate):
//   gates = cat([old_h, input], 1) @ weights^T + bias, split into i, o, c of S columns each
//   new_cell = old_cell + elu(c) * sigmoid(i);  new_h = tanh(new_cell) * sigmoid(o)
// input [B, I], weights [3S, S + I], bias [3S], old_h and old_cell [B, S]; one floating dtype and
// device for all. Returns (new_h, new_cell). Differentiable in all five inputs.
std::tuple<at::Tensor, at::Tensor> lltm(const at::Tensor& input, const at::Tensor& weights,
                                        const at::Tensor& bias, const at::Tensor& old_h,
                                        const at::Tensor& old_cell);

// Fused per-pixel colour augmentation of [C, H, W], [N, C, H, W] or [N, T, C, H, W] images
// (float32, float64, float16, bfloat16 or uint8 read as v / 255), per sample:
//   y_c = clamp(x_c * color_c * sum(x) / (sum(x * color) + 0.01), 0, 1) ^ gamma
//   out_c = clamp(0.5 + (y_c + brightness - 0.5) * contrast, 0, 1), then (out_c - mean_c) / std_c
// color is [C] or [N, C]; brightness, contrast and gamma are [] or [N]. Samples whose `apply` is
// false pass through unchanged (converted and normalised). `dtype` sets the output dtype.
// Differentiable in the image and all four parameters for floating images and outputs.
at::Tensor color_transform(const at::Tensor& image, const at::Tensor& color,
                           const at::Tensor& brightness, const at::Tensor& contrast,
                           const at::Tensor& gamma,
                           const std::optional<at::Tensor>& apply = std::nullopt,
                           std::optional<at::ScalarType> dtype = std::nullopt,
                           std::optional<c10::ArrayRef<double>> mean = std::nullopt,
                           std::optional<c10::ArrayRef<double>> stddev = std::nullopt);

// torchvision's photometric adjustments (transforms.v2.functional), per sample, in one pass over
// the image (two with a reduction stage: contrast's grayscale mean, autocontrast's channel
// minima and maxima). `stages` names the slots' kinds (photo::Kind in
// kernels/photometric/photometric.h: brightness 1, contrast 2, saturation 3, hue 4, grayscale 5, solarize 6, posterize 7, invert 8,
// permute_channels 9, autocontrast 10, equalize 11, color_augment 12 (color_transform's formula;
// its slot, the first gain, is followed by five color_augment parameter slots, code 13: the
// other two gains, brightness, contrast, gamma); at most one reduction stage; none: the
// output conversion alone); factors ([K] or [N, K], K = stages.size()) their parameters; order
// ([K] or [N, K]) the order each sample runs its slots in, as int64 permutations of 0..K-1 or as
// floating keys (ascending, ties by slot: argsort(keys, stable=True)); apply ([K] or [N, K]
// bool) which of them it runs; with factor_ranges (2K values: each slot's low, then each slot's
// width) factors are uniforms u, slot k's factor fma(width[k], u, low[k]) in float64 (u as the
// compute type holds it: float32, float64 for a float64 image), rounded to float32 (a
// color_augment stage's gamma slot: exp of it, its range log gamma's; a permutation slot: the
// code of permutation floor of it, clamped to 0..5, of the six of (0, 1, 2) in lexicographic
// order, so that the range [0, 6) draws one uniformly); factor_ranges' long form (8K values:
// those, then each slot's factor column, coin column, coin bound, key column, key low and key
// width) draws every parameter from `factors` as uniforms ([U] or [N, U]; no order, no apply):
// the factor of its factor column's u (-1: u = 0), applied where float32(coin column's u) <
// float32(coin bound) (-1: always), the slots in the ascending order of fma(key width, key
// column's u, key low) in float64 (-1: key low), ties by slot. The image is
// [C, H, W], [N, C, H, W] or [N, T, C, H, W] with C 1 or 3, uint8 or floating; `dtype` converts
// the output as to_dtype(scale=True), then mean / std normalise it. Differentiable in a floating
// image with a floating output (not in the factors, nor through autocontrast or equalize).
at::Tensor photometric(const at::Tensor& image, c10::IntArrayRef stages, const at::Tensor& factors,
                       const std::optional<at::Tensor>& order = std::nullopt,
                       const std::optional<at::Tensor>& apply = std::nullopt,
                       std::optional<at::ScalarType> dtype = std::nullopt,
                       std::optional<c10::ArrayRef<double>> mean = std::nullopt,
                       std::optional<c10::ArrayRef<double>> stddev = std::nullopt,
                       std::optional<c10::ArrayRef<double>> factor_ranges = std::nullopt);

// torchvision's geometric transforms per sample fused with the photometric program (see
// docs/operators.md): `images` (a list of [C, H, W] images of any sizes, or [N, C, H, W] batches,
// one dtype and device, C 1 or 3) are S samples; geometry ([S, 10] int64) gives each its window
// (top, left, height, width; outside the image: padding_mode 0 constant with `fill`, 1 edge,
// 2 reflect, 3 symmetric), the window's flips (bit 0 left-right, bit 1 top-bottom), the size it
// is resized to (interpolation 0 nearest, 1 bilinear, 2 bicubic, 3 nearest-exact, antialiased
// as torchvision's resize), the output's offset in the resized image and the output's flips;
// the output, [S, C, size[0], size[1]], then runs photometric()'s program and conversion.
// `warp` ([S, 9] float64: 8 coefficients, then the kind, 0 none, 1 affine, 2 perspective) samples
// each warped sample's window through torchvision's affine or perspective grid (interpolation 0
// or 1; `fill` given: torchvision's fill through the mask) instead of resizing it.
// Differentiable in floating images with a floating output.
at::Tensor augment(at::TensorList images, const at::Tensor& geometry, c10::SymIntArrayRef size,
                   int64_t interpolation = 1, bool antialias = true, int64_t padding_mode = 0,
                   std::optional<c10::ArrayRef<double>> fill = std::nullopt,
                   c10::IntArrayRef stages = {},
                   const std::optional<at::Tensor>& factors = std::nullopt,
                   const std::optional<at::Tensor>& order = std::nullopt,
                   const std::optional<at::Tensor>& apply = std::nullopt,
                   std::optional<at::ScalarType> dtype = std::nullopt,
                   std::optional<c10::ArrayRef<double>> mean = std::nullopt,
                   std::optional<c10::ArrayRef<double>> stddev = std::nullopt,
                   std::optional<c10::ArrayRef<double>> factor_ranges = std::nullopt,
                   std::optional<at::MemoryFormat> memory_format = std::nullopt,
                   const std::optional<at::Tensor>& warp = std::nullopt);

// Each image's gradient of augment() from the output's gradient `grad` (gpuaug::_augment_backward).
std::vector<at::Tensor> augment_backward(
    const at::Tensor& grad, at::TensorList images, const at::Tensor& geometry,
    int64_t interpolation, bool antialias, int64_t padding_mode,
    std::optional<c10::ArrayRef<double>> fill, c10::IntArrayRef stages,
    const std::optional<at::Tensor>& factors, const std::optional<at::Tensor>& order,
    const std::optional<at::Tensor>& apply, std::optional<c10::ArrayRef<double>> stddev,
    std::optional<c10::ArrayRef<double>> factor_ranges,
    const std::optional<at::Tensor>& warp = std::nullopt);

// torchvision's AutoAugment operations per sample (TrivialAugmentWide, RandAugment, AutoAugment,
// AugMix): each sample of `image` ([N, C, H, W], uint8, float32 or float64, C 1 or 3) runs B
// chains of D <= 4 operations, `operations` ([N, B, D] int64: 0 Identity, 1 ShearX, 2 ShearY,
// 3 TranslateX, 4 TranslateY, 5 Rotate, 6 Brightness, 7 Color, 8 Contrast, 9 Sharpness,
// 10 Posterize, 11 Solarize, 12 AutoContrast, 13 Equalize, 14 Invert) with `magnitudes`
// ([N, B, D] float64), each as torchvision's _apply_image_or_video_transform(name, magnitude)
// runs it (warps with interpolation 0 nearest or 1 bilinear, `fill` given: through the mask).
// Without `weights` (B = 1) the chain's image is the output; with them ([N, B + 1] float32) the
// output is AugMix's mixture w0 image + sum of w_b chain_b, in the image's dtype. Then
// to_dtype(dtype, scale=True) (the image's, or float32 from uint8) and mean/std. A floating
// image has a gradient (auto_augment_backward; docs/policies.md says which derivative each
// operation takes).
at::Tensor auto_augment(const at::Tensor& image, const at::Tensor& operations,
                        const at::Tensor& magnitudes,
                        const std::optional<at::Tensor>& weights = std::nullopt,
                        int64_t interpolation = 0,
                        std::optional<c10::ArrayRef<double>> fill = std::nullopt,
                        std::optional<at::ScalarType> dtype = std::nullopt,
                        std::optional<c10::ArrayRef<double>> mean = std::nullopt,
                        std::optional<c10::ArrayRef<double>> stddev = std::nullopt);

// The floating image's gradient of auto_augment() from the output's gradient `grad`
// (gpuaug::_auto_augment_backward).
at::Tensor auto_augment_backward(const at::Tensor& grad, const at::Tensor& image,
                                 const at::Tensor& operations, const at::Tensor& magnitudes,
                                 const std::optional<at::Tensor>& weights, int64_t interpolation,
                                 std::optional<c10::ArrayRef<double>> fill,
                                 std::optional<c10::ArrayRef<double>> stddev);

// A user-defined element-wise operator, compiled at run time by NVRTC for the GPU in use (CUDA
// tensors only): `expression` is a CUDA C++ expression of the inputs, named by `names` in order
// (one per tensor of `inputs`; they broadcast like PyTorch's and share one floating dtype, and the
// expression sees them as float, or double for float64). `grads`, one expression per input of the
// inputs and `grad` (the output's gradient), gives each input's gradient and makes the operator
// differentiable. `name` (a C identifier) names its kernels and its errors.
at::Tensor jit_elementwise(const std::string& name, const std::string& expression,
                           const std::vector<std::string>& names, at::TensorList inputs,
                           const std::optional<std::vector<std::string>>& grads = std::nullopt);

}  // namespace gpuaug
