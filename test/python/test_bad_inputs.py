"""Bad calls across every op, in one table: each raises, and its message names the op and the
argument and says what was expected and what came (the first line, compared exactly). Device
mixes use the meta device, so the table runs without a GPU too."""
import pytest
import torch

import gpuaug

ops = torch.ops.gpuaug
FLOATING = "a floating dtype (float32, float64, float16 or bfloat16)"


def image(*shape, dtype=torch.float32):
    return torch.rand(shape).to(dtype) if dtype.is_floating_point else \
        torch.randint(0, 256, shape, dtype=dtype)


def params(n=2, c=3):
    return [torch.rand(n, c) + 0.5, torch.rand(n) * 0.2, torch.rand(n) + 0.5, torch.rand(n) + 0.5]


def lltm_args(b=2, i=3, s=4):
    return [torch.randn(b, i), torch.randn(3 * s, s + i), torch.randn(3 * s), torch.randn(b, s),
            torch.randn(b, s)]


def lltm_with(index, value):
    args = lltm_args()
    args[index] = value
    return args


def color_with(index, value, **kwargs):
    args = [image(2, 3, 4, 5)] + params()
    args[index] = value
    return lambda: ops.color_transform(*args, **kwargs)


CT = "gpuaug::color_transform: "
LLTM_SIZES = "(B = 2 from 'input', I = 3 from 'input', S = 4 from 'old_h')"

CASES = [
    # relu, round_ste, mul and their backward ops
    ("relu int64", lambda: ops.relu(torch.ones(3, dtype=torch.int64)),
     f"gpuaug::relu: expected argument 'x' to have {FLOATING}, but got Long"),
    ("relu bool", lambda: ops.relu(torch.ones(3, dtype=torch.bool)),
     f"gpuaug::relu: expected argument 'x' to have {FLOATING}, but got Bool"),
    ("relu complex", lambda: ops.relu(torch.ones(3, dtype=torch.complex64)),
     f"gpuaug::relu: expected argument 'x' to have {FLOATING}, but got ComplexFloat"),
    ("round_ste int8", lambda: ops.round_ste(torch.ones(3, dtype=torch.int8)),
     f"gpuaug::round_ste: expected argument 'x' to have {FLOATING}, but got Char"),
    ("round_ste uint8", lambda: ops.round_ste(torch.ones(3, dtype=torch.uint8)),
     f"gpuaug::round_ste: expected argument 'x' to have {FLOATING}, but got Byte"),
    ("mul int32", lambda: ops.mul(torch.ones(3, dtype=torch.int32), torch.ones(3, dtype=torch.int32)),
     f"gpuaug::mul: expected argument 'a' to have {FLOATING}, but got Int"),
    ("mul dtype mix", lambda: ops.mul(torch.ones(3), torch.ones(3, dtype=torch.float64)),
     "gpuaug::mul: expected 'b' to have the dtype of 'a' (Float), but got Double"),
    ("mul device mix", lambda: ops.mul(torch.ones(3), torch.ones(3, device="meta")),
     "gpuaug::mul: expected 'b' on the device of 'a' (cpu), but got meta"),
    ("mul no broadcast", lambda: ops.mul(torch.ones(3), torch.ones(4)),
     "gpuaug::mul: shapes of 'a' [3] and 'b' [4] do not broadcast (dimension 0: 3 vs 4)"),
    ("mul no broadcast 2-d", lambda: ops.mul(torch.ones(2, 3), torch.ones(3, 2)),
     "gpuaug::mul: shapes of 'a' [2, 3] and 'b' [3, 2] do not broadcast (dimension 1: 3 vs 2)"),
    ("relu backward shape", lambda: ops._relu_backward(torch.ones(3), torch.ones(4)),
     "gpuaug::_relu_backward: expected 'grad' to have the shape of 'x' [4], but got [3]"),
    ("relu backward dtype", lambda: ops._relu_backward(torch.ones(3, dtype=torch.float64), torch.ones(3)),
     "gpuaug::_relu_backward: expected 'grad' to have the dtype of 'x' (Float), but got Double"),
    ("mul backward grad shape", lambda: ops._mul_backward(torch.ones(2), torch.ones(3), torch.ones(3)),
     "gpuaug::_mul_backward: expected 'grad' of the broadcast shape [3], but got [2]"),
    # color_transform
    ("color image int32", color_with(0, image(2, 3, 4, 5, dtype=torch.int32)),
     CT + "expected 'image' of dtype float32, float64, float16, bfloat16 or uint8, but got Int"),
    ("color image rank 2", color_with(0, image(4, 5)),
     CT + "expected 'image' of shape [C, H, W], [N, C, H, W] or [N, T, C, H, W], but got 2-d "
          "shape [4, 5]"),
    ("color image rank 6", color_with(0, image(1, 1, 2, 3, 4, 5)),
     CT + "expected 'image' of shape [C, H, W], [N, C, H, W] or [N, T, C, H, W], but got 6-d "
          "shape [1, 1, 2, 3, 4, 5]"),
    ("color 33 channels", lambda: ops.color_transform(image(2, 33, 4, 5), torch.ones(2, 33),
                                                      *params()[1:]),
     CT + "expected 'image' to have 1 to 32 channels (dimension 1), but got 33"),
    ("color channel count", color_with(1, torch.ones(2, 4)),
     CT + "expected 'color' of shape [3] or [2, 3] for an image of shape [2, 3, 4, 5], but got "
          "[2, 4]"),
    ("color batch", color_with(1, torch.ones(3, 3)),
     CT + "expected 'color' of shape [3] or [2, 3] for an image of shape [2, 3, 4, 5], but got "
          "[3, 3]"),
    ("color empty", color_with(1, torch.ones(0)),
     CT + "expected 'color' of shape [3] or [2, 3] for an image of shape [2, 3, 4, 5], but got "
          "[0]"),
    ("color int", color_with(1, torch.ones(2, 3, dtype=torch.int32)),
     CT + "expected 'color' to be a floating tensor, but got Int"),
    ("color on another device", color_with(1, torch.ones(2, 3, device="meta")),
     CT + "expected 'color' on cpu like 'image', but got meta"),
    ("brightness length", color_with(2, torch.ones(3)),
     CT + "expected 'brightness' of shape [] or [2] for an image of shape [2, 3, 4, 5], but got "
          "[3]"),
    ("contrast rank", color_with(3, torch.ones(2, 1)),
     CT + "expected 'contrast' of shape [] or [2] for an image of shape [2, 3, 4, 5], but got "
          "[2, 1]"),
    ("negative gamma", color_with(4, -torch.ones(2)),
     CT + "expected 'gamma' > 0 (it is an exponent on [0, 1]), but got -1"),
    ("zero gamma", color_with(4, torch.zeros(2)),
     CT + "expected 'gamma' > 0 (it is an exponent on [0, 1]), but got 0"),
    ("NaN gamma", color_with(4, torch.full((2,), float("nan"))),
     CT + "expected 'gamma' > 0 (it is an exponent on [0, 1]), but got nan"),
    ("apply length", color_with(0, image(2, 3, 4, 5), apply=torch.ones(3, dtype=torch.bool)),
     CT + "expected 'apply' to be a bool tensor of shape [2], but got Bool of shape [3]"),
    ("apply dtype", color_with(0, image(2, 3, 4, 5), apply=torch.ones(2)),
     CT + "expected 'apply' to be a bool tensor of shape [2], but got Float of shape [2]"),
    ("apply rank", color_with(0, image(2, 3, 4, 5), apply=torch.ones(2, 1, dtype=torch.bool)),
     CT + "expected 'apply' to be a bool tensor of shape [2], but got Bool of shape [2, 1]"),
    ("mean/std with uint8 output",
     color_with(0, image(2, 3, 4, 5, dtype=torch.uint8), dtype=torch.uint8, mean=[0.5] * 3,
                std=[0.2] * 3),
     CT + "'mean' and 'std' need a floating output dtype, but the output is Byte"),
    ("mean length", color_with(0, image(2, 3, 4, 5), mean=[0.5] * 2, std=[0.2] * 3),
     CT + "expected 'mean' of length 3 (one value per channel), but got 2"),
    ("zero std", color_with(0, image(2, 3, 4, 5), mean=[0.5] * 3, std=[0.0] * 3),
     CT + "'std' must not contain 0, but got [0, 0, 0]"),
    ("std without mean", color_with(0, image(2, 3, 4, 5), std=[0.2] * 3),
     CT + "'mean' and 'std' normalise together: pass both or neither, but got only 'std'"),
    ("integer output dtype", color_with(0, image(2, 3, 4, 5), dtype=torch.int32),
     CT + "expected 'dtype' float32, float64, float16, bfloat16 or uint8, but got Int"),
    ("grad through a uint8 image",
     lambda: ops.color_transform(image(2, 3, 4, 5, dtype=torch.uint8),
                                 (torch.rand(2, 3) + 0.5).requires_grad_(), *params()[1:]),
     CT + "gradients need a floating image, but 'image' is Byte and 'color' requires grad"),
    ("grad into a uint8 output",
     lambda: ops.color_transform(image(2, 3, 4, 5).requires_grad_(), *params(), dtype=torch.uint8),
     CT + "a Byte output has no gradient, but 'image' requires grad: ask for a floating 'dtype', "
          "or compute it under torch.no_grad()"),
    # lltm
    ("lltm integer input", lambda: ops.lltm(*lltm_with(0, torch.ones(2, 3, dtype=torch.int64))),
     f"gpuaug::lltm: expected argument 'input' to have {FLOATING}, but got Long"),
    ("lltm dtype mix", lambda: ops.lltm(*lltm_with(4, torch.randn(2, 4, dtype=torch.float64))),
     "gpuaug::lltm: expected 'old_cell' to have the dtype of 'input' (Float), but got Double"),
    ("lltm device mix", lambda: ops.lltm(*lltm_with(1, torch.randn(12, 7, device="meta"))),
     "gpuaug::lltm: expected 'weights' on the device of 'input' (cpu), but got meta"),
    ("lltm input rank", lambda: ops.lltm(*lltm_with(0, torch.randn(3))),
     "gpuaug::lltm: expected 'input' of shape [B, I], but got shape [3]"),
    ("lltm batch mismatch", lambda: ops.lltm(*lltm_with(3, torch.randn(3, 4))),
     f"gpuaug::lltm: expected 'old_h' of shape [B, S] = [2, 4] {LLTM_SIZES}, but got [3, 4]"),
    ("lltm weights shape", lambda: ops.lltm(*lltm_with(1, torch.randn(12, 8))),
     f"gpuaug::lltm: expected 'weights' of shape [3 * S, S + I] = [12, 7] {LLTM_SIZES}, but got "
     "[12, 8]"),
    ("lltm bias length", lambda: ops.lltm(*lltm_with(2, torch.randn(11))),
     f"gpuaug::lltm: expected 'bias' of shape [3 * S] = [12] {LLTM_SIZES}, but got [11]"),
    # None for a Tensor argument reaches the op as an undefined tensor.
    ("relu None", lambda: ops.relu(None), "gpuaug::relu: argument 'x' is an undefined tensor"),
    ("relu backward None", lambda: ops._relu_backward(None, torch.ones(2)),
     "gpuaug::_relu_backward: argument 'grad' is an undefined tensor"),
    ("mul None", lambda: ops.mul(torch.ones(2), None),
     "gpuaug::mul: argument 'b' is an undefined tensor"),
    ("mul backward None", lambda: ops._mul_backward(torch.ones(2), None, torch.ones(2)),
     "gpuaug::_mul_backward: argument 'a' is an undefined tensor"),
    ("round_ste None", lambda: ops.round_ste(None),
     "gpuaug::round_ste: argument 'x' is an undefined tensor"),
    ("color image None", color_with(0, None),
     CT + "argument 'image' is an undefined tensor"),
    ("color gamma None", color_with(4, None), CT + "argument 'gamma' is an undefined tensor"),
    ("lltm None", lambda: ops.lltm(*lltm_with(1, None)),
     "gpuaug::lltm: argument 'weights' is an undefined tensor"),
    ("lltm backward None",
     lambda: ops._lltm_backward(None, None, None, *lltm_args()[:4], [True] * 5),
     "gpuaug::_lltm_backward: argument 'gates' is an undefined tensor"),
]


@pytest.mark.parametrize("call,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_call(call, message):
    with pytest.raises(RuntimeError) as error:
        call()
    assert str(error.value).splitlines()[0] == message


TYPE_ERRORS = [
    (lambda: gpuaug.relu([1.0]), "gpuaug.relu: expected 'x' to be a torch.Tensor, but got list"),
    (lambda: gpuaug.mul(torch.ones(2), 2.0),
     "gpuaug.mul: expected 'b' to be a torch.Tensor, but got float"),
    (lambda: gpuaug.lltm(*lltm_args()[:4], None),
     "gpuaug.lltm: expected 'old_cell' to be a torch.Tensor, but got NoneType"),
]


@pytest.mark.parametrize("call,message", TYPE_ERRORS)
def test_python_type_errors(call, message):
    with pytest.raises(TypeError) as error:
        call()
    assert str(error.value) == message


def test_table_size():
    assert len(CASES) + len(TYPE_ERRORS) >= 40
