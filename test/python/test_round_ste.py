"""gpuaug::round_ste: floor(x + 0.5) computed exactly, straight-through gradient."""
import math
import re

import pytest
import torch

from gpuaug_testing import DEVICES, DTYPES, assert_exact, make_input, round_ste_ref

round_ste = torch.ops.gpuaug.round_ste
round_ste_backward = torch.ops.gpuaug._round_ste_backward

# (input, expected) pairs; the inputs are the dtype's values nearest to these literals. The hard ones: values just below a
# tie whose x + 0.5 rounds up in the dtype, and odd integers where x + 0.5 rounds to even.
EDGES = {
    torch.float32: [(0.5, 1), (0.49, 0), (-0.5, 0), (2.5, 3), (-2.5, -2), (1.5, 2), (-1.5, -1),
                    (0.49999997, 0), (-0.49999997, 0), (8388609.0, 8388609), (8388607.5, 8388608),
                    (-8388607.5, -8388607), (16777217.0 + 1, 16777218), (1e30, 1e30), (-0.0, 0),
                    (1e-30, 0), (-1e-30, 0), (-0.75, -1), (0.75, 1)],
    torch.float64: [(0.5, 1), (-0.5, 0), (2.5, 3), (-2.5, -2), (0.49999999999999994, 0),
                    (-0.49999999999999994, 0), (4503599627370497.0, 4503599627370497),
                    (4503599627370495.5, 4503599627370496), (-4503599627370495.5, -4503599627370495),
                    (1e300, 1e300), (-1e-300, 0)],
    torch.float16: [(0.5, 1), (-0.5, 0), (2.5, 3), (-2.5, -2), (0.49975586, 0), (511.5, 512),
                    (-511.5, -511), (1023.5, 1024), (2050.0, 2050), (65504.0, 65504)],
    torch.bfloat16: [(0.5, 1), (-0.5, 0), (2.5, 3), (-2.5, -2), (0.49804688, 0), (127.5, 128),
                     (-127.5, -127), (258.0, 258), (3.0e38, 3.0e38)],
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_edge_values(dtype, device):
    xs, expected = zip(*EDGES[dtype])
    x = torch.tensor(xs, dtype=torch.float64).to(dtype)
    y = round_ste(x.to(device))
    assert_exact(y, torch.tensor(expected, dtype=torch.float64).to(dtype).to(device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (9,), (4, 5, 6), (4099,)])
def test_values(shape, dtype, device):
    x = make_input(shape, dtype, device, seed=1)
    assert_exact(round_ste(x), round_ste_ref(x))


@pytest.mark.parametrize("device", DEVICES)
def test_ties_round_up_unlike_torch_round(device):
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5], device=device)
    assert_exact(round_ste(x), torch.tensor([1.0, 2, 3, 0, -1, -2], device=device))
    assert not torch.equal(round_ste(x), torch.round(x))   # half-to-even differs on purpose


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_inf(dtype, device):
    x = torch.tensor([math.nan, math.inf, -math.inf], dtype=dtype, device=device)
    assert_exact(round_ste(x), x.clone())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradient_is_the_incoming_gradient(dtype, device):
    x = make_input((5, 7), dtype, device, seed=2, requires_grad=True)
    w = make_input((5, 7), dtype, device, seed=3)
    round_ste(x).backward(w)
    assert_exact(x.grad, w)
    # Also through a non-contiguous incoming gradient.
    x.grad = None
    wt = make_input((7, 5), dtype, device, seed=4).t()
    round_ste(x).backward(wt)
    assert_exact(x.grad, wt.contiguous())


@pytest.mark.parametrize("device", DEVICES)
def test_backward_op_is_an_alias(device):
    grad = make_input((3, 4), torch.float32, device, seed=5)
    out = round_ste_backward(grad)
    assert_exact(out, grad)
    assert out.data_ptr() == grad.data_ptr()   # the schema says Tensor(a) -> Tensor(a)


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward(device):
    x = make_input((6,), torch.float64, device, seed=6, requires_grad=True)
    w = make_input((6,), torch.float64, device, seed=7, requires_grad=True)
    v = make_input((6,), torch.float64, device, seed=8)
    (gx,) = torch.autograd.grad(round_ste(x), x, w, create_graph=True)
    (gw,) = torch.autograd.grad(gx, w, v)
    assert_exact(gw, v)
    assert torch.autograd.gradcheck(round_ste_backward, (w,))
    assert torch.autograd.gradgradcheck(round_ste_backward, (w,))


def test_bad_inputs():
    msg = ("gpuaug::round_ste: expected argument 'x' to have a floating dtype (float32, float64, "
           "float16 or bfloat16), but got Long")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        round_ste(torch.arange(4))
    with pytest.raises(RuntimeError, match=r"gpuaug::round_ste: .*'x'.* but got Byte"):
        round_ste(torch.arange(4, dtype=torch.uint8))


def test_python_wrapper_type_error():
    # Not the dispatcher's schema dump: what was expected and what came.
    import gpuaug
    with pytest.raises(TypeError, match=re.escape(
            "gpuaug.round_ste: expected 'x' to be a torch.Tensor, but got float")):
        gpuaug.round_ste(1.0)


# ---------------------------------------------------------------------------------------------
# Schema and opcheck (schema, autograd registration, fake tensors and AOT dispatch).

def test_schema():
    assert str(round_ste.default._schema) == "gpuaug::round_ste(Tensor x) -> Tensor"
    assert str(round_ste_backward.default._schema) == (
        "gpuaug::_round_ste_backward(Tensor(a) grad) -> Tensor(a)")


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device, requires_grad):
    def t(shape, seed, dtype=torch.float32):
        return make_input(shape, dtype, device, seed).requires_grad_(requires_grad)
    torch.library.opcheck(round_ste.default, (t((7,), 12, torch.float16),))
    torch.library.opcheck(round_ste_backward.default, (t((3, 2), 13),))
