"""gpuaug::mul and gpuaug::mul_backward: broadcasting values, gradients, double backward, errors."""
import math
import re

import pytest
import torch

from gpuaug_testing import (DEVICES, DTYPES, assert_close, assert_exact, assert_sum_close,
                            make_input, mul_ref, requires_cuda)

mul = torch.ops.gpuaug.mul
mul_backward = torch.ops.gpuaug._mul_backward

SHAPES = [
    ((7,), (7,)),
    ((3, 4), (3, 4)),
    ((3, 1), (1, 4)),          # both sides broadcast
    ((2, 3, 4), (4,)),         # fewer dimensions
    ((5,), ()),                # 0-d operand
    ((), (2, 3)),
    ((), ()),
    ((2, 1, 3), (4, 1)),
    ((0, 3), (1, 3)),          # empty
    ((1029,), (1029,)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape_a,shape_b", SHAPES)
def test_values(shape_a, shape_b, dtype, device):
    a = make_input(shape_a, dtype, device, seed=1)
    b = make_input(shape_b, dtype, device, seed=2)
    y = mul(a, b)
    assert y.shape == torch.broadcast_shapes(shape_a, shape_b)
    # One multiplication, correctly rounded: exact against float64 rounded to the dtype.
    assert_exact(y, mul_ref(a, b))
    assert_exact(y, torch.mul(a, b))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_inf(dtype, device):
    a = torch.tensor([math.nan, math.inf, math.inf, -math.inf, 0.0, 3.0], dtype=dtype, device=device)
    b = torch.tensor([1.0, 0.0, -2.0, -math.inf, -1.0, math.nan], dtype=dtype, device=device)
    expected = torch.tensor([math.nan, math.nan, -math.inf, math.inf, -0.0, math.nan],
                            dtype=dtype, device=device)
    assert_exact(mul(a, b), expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape_a,shape_b", [((3, 4), (3, 4)), ((3, 1), (1, 4)),
                                             ((2, 3, 4), (4,)), ((5,), ()), ((2, 1, 3), (4, 1))])
def test_gradient(shape_a, shape_b, dtype, device):
    a = make_input(shape_a, dtype, device, seed=3, requires_grad=True)
    b = make_input(shape_b, dtype, device, seed=4, requires_grad=True)
    y = mul(a, b)
    w = make_input(y.shape, dtype, device, seed=5)
    y.backward(w)
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
    if shape_a == shape_b:
        # No reduction: one rounding each, exact.
        assert_exact(a.grad, mul_ref(w, b))
        assert_exact(b.grad, mul_ref(w, a))
    else:
        # Each product is rounded to the dtype, then summed over the broadcast dimensions.
        assert_sum_close(a.grad, mul_ref(w, b).double())
        assert_sum_close(b.grad, mul_ref(w, a).double())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("length", [257, 1000, 9000])
def test_gradient_of_equal_terms(length, device):
    # An expanded operand and gradient: every product equal, where a plain float64 sum drifts by
    # about length * eps of the total (the CPU's reduction did, by 4.7e-12 in 895 for 257 terms).
    a = make_input((1,), torch.float64, device, seed=16, requires_grad=True)
    b = make_input((1,), torch.float64, device, seed=17).expand(length)
    w = make_input((1,), torch.float64, device, seed=18).expand(length)
    mul(a, b).backward(w)
    assert_sum_close(a.grad, mul_ref(w, b).double())


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_one_input_and_same_tensor(device):
    a = make_input((4, 6), torch.float32, device, seed=6, requires_grad=True)
    b = make_input((4, 6), torch.float32, device, seed=7)
    mul(a, b).sum().backward()
    assert_exact(a.grad, b)
    assert b.grad is None
    x = make_input((4, 6), torch.float64, device, seed=8, requires_grad=True)
    mul(x, x).sum().backward()
    assert_exact(x.grad, 2 * x.detach())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_op(dtype, device):
    a = make_input((2, 1, 5), dtype, device, seed=9)
    b = make_input((3, 1), dtype, device, seed=10)
    grad = make_input((2, 3, 5), dtype, device, seed=11)
    ga, gb = mul_backward(grad, a, b)
    assert ga.shape == a.shape and gb.shape == b.shape
    assert_sum_close(ga, mul_ref(grad, b).double())
    assert_sum_close(gb, mul_ref(grad, a).double())
    # Same shapes: no reduction, so exact.
    a2 = make_input((2, 3, 5), dtype, device, seed=12)
    b2 = b.expand(2, 3, 5).contiguous()
    ga, gb = mul_backward(grad, a2, b2)
    assert_exact(ga, mul_ref(grad, b2))
    assert_exact(gb, mul_ref(grad, a2))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape_a,shape_b", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3), ())])
def test_gradcheck_and_gradgradcheck(shape_a, shape_b, device):
    a = make_input(shape_a, torch.float64, device, seed=13, requires_grad=True)
    b = make_input(shape_b, torch.float64, device, seed=14, requires_grad=True)
    assert torch.autograd.gradcheck(mul, (a, b))
    assert torch.autograd.gradgradcheck(mul, (a, b))
    grad = make_input(torch.broadcast_shapes(shape_a, shape_b), torch.float64, device, seed=15,
                      requires_grad=True)
    assert torch.autograd.gradcheck(mul_backward, (grad, a, b))
    assert torch.autograd.gradgradcheck(mul_backward, (grad, a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward(device):
    a = make_input((3, 1), torch.float64, device, seed=16, requires_grad=True)
    b = make_input((1, 4), torch.float64, device, seed=17, requires_grad=True)
    w = make_input((3, 4), torch.float64, device, seed=18)
    ga, gb = torch.autograd.grad(mul(a, b), (a, b), w, create_graph=True)
    # d/db of sum(ga) = d/db sum_i,j w_ij b_j = sum_i w_ij ; d/da of sum(gb) = sum_j w_ij.
    d_b, = torch.autograd.grad(ga.sum(), b, retain_graph=True)
    d_a, = torch.autograd.grad(gb.sum(), a)
    assert_close(d_b, w.sum(0, keepdim=True))
    assert_close(d_a, w.sum(1, keepdim=True))


def test_bad_inputs():
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::mul: expected 'b' to have the dtype of 'a' (Float), but got Double")):
        mul(torch.ones(3), torch.ones(3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::mul: expected 'b' to have the dtype of 'a' (Float), but got Half")):
        mul(torch.ones(3, requires_grad=True), torch.ones(3, dtype=torch.float16))
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::mul: expected argument 'a' to have a floating dtype (float32, float64, "
            "float16 or bfloat16), but got Long")):
        mul(torch.arange(3), torch.arange(3))
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::mul: shapes of 'a' [3] and 'b' [4] do not broadcast (dimension 0: 3 vs 4)")):
        mul(torch.ones(3), torch.ones(4))
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::mul: shapes of 'a' [2, 3] and 'b' [4, 1, 2] do not broadcast (dimension 2: 3 vs 2)")):
        mul(torch.ones(2, 3), torch.ones(4, 1, 2))
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::_mul_backward: expected 'grad' of the broadcast shape [3], but got [4]")):
        mul_backward(torch.ones(4), torch.ones(3), torch.ones(3))


@requires_cuda
def test_mismatched_devices():
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::mul: expected 'b' on the device of 'a' (cuda:0), but got cpu")):
        mul(torch.ones(3, device="cuda"), torch.ones(3))
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::mul: expected 'b' on the device of 'a' (cpu), but got cuda:0")):
        mul(torch.ones(3), torch.ones(3, device="cuda"))
    # A 0-d CPU tensor is not promoted like a scalar either.
    with pytest.raises(RuntimeError, match=re.escape("on the device of 'a' (cuda:0), but got cpu")):
        mul(torch.ones(3, device="cuda"), torch.tensor(2.0))
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::_mul_backward: expected 'b' on the device of 'a' (cuda:0), but got cpu")):
        mul_backward(torch.ones(3, device="cuda"), torch.ones(3, device="cuda"), torch.ones(3))


def test_python_wrapper_type_error():
    # Not the dispatcher's schema dump: what was expected and what came.
    import gpuaug
    with pytest.raises(TypeError, match=re.escape(
            "gpuaug.mul: expected 'a' to be a torch.Tensor, but got float")):
        gpuaug.mul(2.0, torch.ones(3))
    with pytest.raises(TypeError, match=re.escape(
            "gpuaug.mul: expected 'b' to be a torch.Tensor, but got list")):
        gpuaug.mul(torch.ones(3), [1.0, 2.0, 3.0])


# ---------------------------------------------------------------------------------------------
# Schema and opcheck (schema, autograd registration, fake tensors and AOT dispatch).

def test_schema():
    assert str(mul.default._schema) == "gpuaug::mul(Tensor a, Tensor b) -> Tensor"
    assert str(mul_backward.default._schema) == (
        "gpuaug::_mul_backward(Tensor grad, Tensor a, Tensor b) -> (Tensor, Tensor)")


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device, requires_grad):
    def t(shape, seed, dtype=torch.float32):
        return make_input(shape, dtype, device, seed).requires_grad_(requires_grad)
    torch.library.opcheck(mul.default, (t((3, 1), 5), t((1, 4), 6)))
    torch.library.opcheck(mul.default, (t((4, 6), 7, torch.float64), t((), 8, torch.float64)))
    torch.library.opcheck(mul_backward.default, (t((3, 4), 9), t((3, 1), 10), t((4,), 11)))
